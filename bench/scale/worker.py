"""A Python worker for `make scale`: runs every job of queue NAME (SHARDS shards) at URL with a
no-op handler until SIGTERM, then prints its stats as JSON."""

import json
import sys

import tideq

url, name, shards, concurrency = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
q = tideq.Queue(name, url=url, shards=shards)
print("ready", flush=True)
stats = q.run(lambda job: None, concurrency=concurrency, poll_interval=1.0)
print(json.dumps({"completed": stats.completed, "failed": stats.failed}), flush=True)
