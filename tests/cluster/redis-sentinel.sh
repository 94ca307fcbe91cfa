#!/usr/bin/env bash
# Starts or stops a Sentinel-managed primary for tests: a primary, one replica and three
# `redis-server --sentinel` processes on free loopback ports, each with its files under DIR. The
# Sentinels monitor the primary as `tideq-primary` (quorum 2, down-after 1000 ms, failover-timeout
# 5000 ms). Mirrors SentinelSetup in testing/src/sentinel.rs.
#   redis-sentinel.sh start DIR -> prints "PRIMARY_PORT REPLICA_PORT redis://127.0.0.1:S1,redis://127.0.0.1:S2,redis://127.0.0.1:S3"
#                                  once the replica is in sync and every Sentinel sees the replica
#                                  and the two other Sentinels; on failure prints the logs to
#                                  stderr, stops everything and exits 1
#   redis-sentinel.sh stop DIR  -> kills every process started in DIR and removes DIR
# Extra redis-server arguments for the primary and the replica can be given in
# TIDEQ_SENTINEL_ARGS. Needs redis-server, redis-cli and python3 (for free ports).
set -euo pipefail
cmd=${1:?start|stop}; dir=${2:?DIR}
MASTER=tideq-primary

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

stop_all() {
  for pid in "$dir"/*/redis.pid; do [ -f "$pid" ] && kill -9 "$(cat "$pid")" 2>/dev/null || true; done
}

fail() {
  echo "redis-sentinel.sh: $*" >&2
  for log in "$dir"/*/redis.log; do [ -f "$log" ] && { echo "--- $log" >&2; tail -n 30 "$log" >&2; }; done
  stop_all
  rm -rf "$dir"
  exit 1
}

# Runs redis-server (daemonized) with the arguments given after the kind (`node` or `sentinel`)
# on a free port, retrying with another port if it was taken meanwhile. The server is ours when
# its INFO reports the pid in its pidfile. Prints the port.
launch() {
  local kind=$1; shift
  local attempt p d pid
  for attempt in 1 2 3 4 5; do
    p=$(free_port); d="$dir/$p"
    mkdir -p "$d"
    if [ "$kind" = sentinel ]; then
      # Sentinel rewrites its config file, so each gets its own.
      cat >"$d/sentinel.conf" <<EOF
port $p
bind 127.0.0.1
dir "$d"
daemonize yes
pidfile "$d/redis.pid"
logfile "$d/redis.log"
sentinel monitor $MASTER 127.0.0.1 $PRIMARY_PORT 2
sentinel down-after-milliseconds $MASTER 1000
sentinel failover-timeout $MASTER 5000
sentinel parallel-syncs $MASTER 1
EOF
      redis-server "$d/sentinel.conf" --sentinel >/dev/null 2>&1 || true
    else
      redis-server --port "$p" --bind 127.0.0.1 --dir "$d" --save '' --appendonly no \
        --repl-diskless-sync yes --repl-diskless-sync-delay 0 --repl-diskless-load swapdb \
        --enable-debug-command local \
        --daemonize yes --pidfile "$d/redis.pid" --logfile "$d/redis.log" \
        "$@" ${TIDEQ_SENTINEL_ARGS:-} >/dev/null 2>&1 || true
    fi
    for _ in $(seq 100); do
      if [ -s "$d/redis.pid" ]; then
        pid=$(cat "$d/redis.pid")
        if redis-cli -p "$p" info server 2>/dev/null | tr -d '\r' | grep -qx "process_id:$pid"; then
          echo "$p"; return 0
        fi
        kill -0 "$pid" 2>/dev/null || break # it died (port taken?)
      elif grep -qs 'Address already in use' "$d/redis.log"; then
        break
      fi
      sleep 0.05
    done
    [ -s "$d/redis.pid" ] && kill -9 "$(cat "$d/redis.pid")" 2>/dev/null || true
    mv "$d" "$d.failed-$attempt" 2>/dev/null || true
  done
  return 1
}

# How many entries `SENTINEL SUBCOMMAND tideq-primary` lists on the Sentinel at PORT (0 on
# error). In raw mode every field is a line of its own, and every entry has one `name` field.
count_entries() {
  redis-cli -p "$1" sentinel "$2" "$MASTER" 2>/dev/null | tr -d '\r' | grep -cx name || true
}

case "$cmd" in
start)
  command -v redis-server >/dev/null || { echo "redis-sentinel.sh: redis-server not found (scripts/ensure-deps.sh)" >&2; exit 1; }
  mkdir -p "$dir"
  PRIMARY_PORT=$(launch node) || fail "the primary did not start"
  REPLICA_PORT=$(launch node --replicaof 127.0.0.1 "$PRIMARY_PORT") || fail "the replica did not start"
  sentinels=()
  for i in 1 2 3; do
    s=$(launch sentinel) || fail "Sentinel $i did not start"
    sentinels+=("$s")
  done
  ready=0
  for _ in $(seq 300); do # up to ~30 s
    ok=1
    redis-cli -p "$REPLICA_PORT" info replication 2>/dev/null | grep -q 'master_link_status:up' || ok=0
    for s in "${sentinels[@]}"; do
      [ "$ok" = 1 ] || break
      [ "$(count_entries "$s" replicas)" -eq 1 ] || ok=0
      [ "$(count_entries "$s" sentinels)" -eq 2 ] || ok=0
    done
    if [ "$ok" = 1 ]; then ready=1; break; fi
    sleep 0.1
  done
  [ "$ready" = 1 ] || fail "the Sentinels never saw the replica and each other"
  urls=(); for s in "${sentinels[@]}"; do urls+=("redis://127.0.0.1:$s"); done
  echo "$PRIMARY_PORT $REPLICA_PORT $(IFS=,; echo "${urls[*]}")"
  ;;
stop)
  [ -d "$dir" ] && stop_all
  rm -rf "$dir"
  ;;
*) echo "usage: $0 start|stop DIR" >&2; exit 2 ;;
esac
