"""Shared by the Python job-queue bench scripts (tideq_py.py, bullmq_py.py, arq_py.py).

Standard library only: the scripts run under three different virtualenvs. Holds the common
payload, the result line, percentiles, VmRSS, the due times and payloads of the lateness runs, and
the idle measurement (a tiny RESP client, so the measurement does not depend on any of the
libraries being measured).

Lateness (every script, two runs of LATE_JOBS jobs on a fresh queue, worker concurrency
LATE_CONCURRENCY): job i is due at start + i * spread_ms / LATE_JOBS (whole ms, rounded down;
start LATE_AHEAD_S ahead) and carries its due ms in its payload (`{"due": <ms>, ...}`); the handler
takes the clock first, then reads the due ms from the job: lateness = handler start - that job's
due time (ms, this machine's clock).
- spread_ms = LATE_SPREAD_MS (1 000): "2 000 jobs due in the same second", the issue's metric:
  lateness_p50_ms / lateness_p99_ms / lateness_min_ms (lateness_summary).
- spread_ms = 0: all due at one instant (a burst): burst_p50_ms / burst_p99_ms (burst_summary).
"""

from __future__ import annotations

import json
import os
import socket
import sys
import threading
import time
import uuid
from typing import Any, Callable
from urllib.parse import urlparse

# ~50 bytes of JSON, the same in every script (BullMQ/arq get the equivalent object).
PAYLOAD_OBJ = {"user_id": 123456, "task": "send_welcome_email", "n": 1}
PAYLOAD = json.dumps(PAYLOAD_OBJ, separators=(",", ":")).encode()
LATE_JOBS = 2000
LATE_AHEAD_S = 2.0
LATE_CONCURRENCY = 100
# The main lateness run spreads the due times evenly over this window; the burst run uses 0.
LATE_SPREAD_MS = 1000
# The idle window: 5 s as the issue asks; JOBS_BENCH_IDLE_S (run.py --idle-seconds) changes it.
IDLE_SECONDS = float(os.environ.get("JOBS_BENCH_IDLE_S") or 5.0)
IDLE_CONCURRENCY = 10
START_MARK = "tideq-bench-idle-start"


def usage(doc: str) -> tuple[str, int]:
    if len(sys.argv) not in (3, 5):
        sys.exit(doc)
    return sys.argv[1], int(sys.argv[2])


def worker_mode() -> str | None:
    """The worker process of `worker_rss`, if this is one: the queue's name, else None."""
    return sys.argv[4] if len(sys.argv) == 5 and sys.argv[3] == "worker" else None


def worker_rss(script: str, url: str, n: int, queue: str) -> float:
    """worker_rss_mb: the peak RSS (VmHWM) of a process that only runs a worker at concurrency
    100 over `n` jobs already enqueued in `queue`: `script` again, as `SCRIPT URL N worker QUEUE`
    (see worker_mode), so the producer's buffers are not counted."""
    import subprocess

    out = subprocess.run([sys.executable, script, url, str(n), "worker", queue],
                         check=True, capture_output=True, text=True).stdout
    return float(out.strip())


def fresh_name(tag: str) -> str:
    return f"jb-{tag}-{uuid.uuid4().hex[:12]}"


def rate(n: int, seconds: float) -> float:
    return round(n / seconds) if seconds > 0 else 0.0


def percentile(sorted_values: list[float], p: float) -> float:
    if not sorted_values:
        return float("nan")
    i = round(p / 100 * (len(sorted_values) - 1))
    return sorted_values[min(i, len(sorted_values) - 1)]


def lateness_summary(late_ms: list[float]) -> dict[str, float]:
    v = sorted(late_ms)
    return {
        "lateness_p50_ms": round(percentile(v, 50), 2),
        "lateness_p99_ms": round(percentile(v, 99), 2),
        "lateness_min_ms": round(v[0], 2) if v else float("nan"),
    }


def burst_summary(late_ms: list[float]) -> dict[str, float]:
    v = sorted(late_ms)
    return {
        "burst_p50_ms": round(percentile(v, 50), 2),
        "burst_p99_ms": round(percentile(v, 99), 2),
    }


# Enqueue to start (every script that can): an idle worker at concurrency START_CONCURRENCY; the
# bench enqueues START_JOBS jobs one by one, paced at START_RATE per second, each carrying the ms
# it was enqueued at ({"at": <epoch ms>, ...}); the handler takes the clock first: start - at.
START_JOBS = 2000
START_RATE = 1000
START_CONCURRENCY = 10


def paced_times() -> list[float]:
    """perf_counter() instants at which the START_JOBS enqueues are due, from now."""
    t0 = time.perf_counter()
    return [t0 + i / START_RATE for i in range(START_JOBS)]


def wait_until(t: float) -> None:
    d = t - time.perf_counter()
    if d > 0.001:
        time.sleep(d)


def at_payload() -> bytes:
    return json.dumps({"at": time.time() * 1000, **PAYLOAD_OBJ}, separators=(",", ":")).encode()


def start_summary(ms: list[float]) -> dict[str, float]:
    v = sorted(ms)
    return {"start_p50_ms": round(percentile(v, 50), 3), "start_p99_ms": round(percentile(v, 99), 3)}


def late_dues(spread_ms: int) -> list[int]:
    """Due times (epoch ms, whole) of the LATE_JOBS jobs of one lateness run: job i at
    start + i * spread_ms / LATE_JOBS, rounded down to a whole ms (the queues take whole ms),
    start LATE_AHEAD_S from now. spread_ms = 0: all at one instant."""
    start = round(time.time() * 1000 + LATE_AHEAD_S * 1000)
    return [start + i * spread_ms // LATE_JOBS for i in range(LATE_JOBS)]


def due_payload_obj(due_ms: int) -> dict[str, Any]:
    """PAYLOAD_OBJ with the job's due time first: {"due": <epoch ms>, ...}."""
    return {"due": due_ms, **PAYLOAD_OBJ}


def due_payload(due_ms: int) -> bytes:
    """due_payload_obj as compact JSON bytes (the tideq payload; the Rust script writes the same)."""
    return json.dumps(due_payload_obj(due_ms), separators=(",", ":")).encode()


def rss_mb(field: str = "VmRSS") -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return round(int(line.split()[1]) / 1024, 1)
    return float("nan")


def emit(result: dict[str, Any]) -> None:
    print(json.dumps(result), flush=True)


def host_port(url: str) -> tuple[str, int, int]:
    u = urlparse(url)
    db = int(u.path.lstrip("/") or 0) if u.path not in ("", "/") else 0
    return u.hostname or "127.0.0.1", u.port or 6379, db


# ---- idle measurement -----------------------------------------------------------------------


class Resp:
    """Just enough RESP2 for CONFIG / INFO / MONITOR."""

    def __init__(self, url: str) -> None:
        host, port, _ = host_port(url)
        self.sock = socket.create_connection((host, port))
        self.buf = b""

    def send(self, *args: str) -> None:
        out = [f"*{len(args)}\r\n".encode()]
        for a in args:
            b = a.encode()
            out.append(b"$%d\r\n%s\r\n" % (len(b), b))
        self.sock.sendall(b"".join(out))

    def line(self) -> bytes:
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("redis closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def reply(self) -> Any:
        line = self.line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            raise RuntimeError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            while len(self.buf) < n + 2:
                self.buf += self.sock.recv(65536)
            data, self.buf = self.buf[:n], self.buf[n + 2 :]
            return data.decode()
        if kind == b"*":
            return [self.reply() for _ in range(int(rest))]
        raise RuntimeError(f"unexpected reply {line!r}")

    def cmd(self, *args: str) -> Any:
        self.send(*args)
        return self.reply()

    def close(self) -> None:
        self.sock.close()


def commandstats_calls(info: str) -> dict[str, int]:
    """calls per command from INFO commandstats, without the measuring connection's info/config."""
    out: dict[str, int] = {}
    for line in info.splitlines():
        if not line.startswith("cmdstat_"):
            continue
        name, _, fields = line[len("cmdstat_") :].partition(":")
        if name.split("|")[0] in ("info", "config"):
            continue
        for f in fields.split(","):
            if f.startswith("calls="):
                out[name] = int(f[len("calls=") :])
    return out


def measure_idle(url: str, seconds: float = IDLE_SECONDS) -> dict[str, Any]:
    """Blocking: CONFIG RESETSTAT, wait, INFO commandstats; meanwhile MONITOR on a second
    connection counts the commands clients sent (script-internal calls are marked "lua" there).
    Returns idle_cmds_per_s (every call in commandstats, script-internal ones included) and
    idle_client_cmds_per_s (commands sent by clients: round trips)."""
    ctl, mon = Resp(url), Resp(url)
    assert mon.cmd("MONITOR") == "OK"
    lines: list[str] = []
    done = threading.Event()

    def read_monitor() -> None:
        try:
            while True:
                text = mon.line().decode(errors="replace")
                lines.append(text)
                if '"info"' in text.lower() and "commandstats" in text.lower():
                    break
        except OSError:
            pass
        finally:
            done.set()

    reader = threading.Thread(target=read_monitor, daemon=True)
    reader.start()
    # MONITOR does not show CONFIG: an ECHO just before the reset marks the start (not counted).
    ctl.cmd("ECHO", START_MARK)
    ctl.cmd("CONFIG", "RESETSTAT")
    time.sleep(seconds)
    info = ctl.cmd("INFO", "commandstats")
    done.wait(5)
    ctl.close()
    mon.close()
    calls = commandstats_calls(info)
    # Client commands between the start mark and INFO, not from a script, not ours.
    client: dict[str, int] = {}
    counting = False
    for text in lines:
        low = text.lower()
        if START_MARK in low:
            counting = True
            continue
        if '"info"' in low and "commandstats" in low:
            break
        if not counting or " lua]" in low:
            continue
        parts = text.split('"')
        cmd = parts[1].lower() if len(parts) > 1 else "?"
        client[cmd] = client.get(cmd, 0) + 1
    total = sum(calls.values())
    return {
        "idle_cmds_per_s": round(total / seconds, 2),
        "idle_client_cmds_per_s": round(sum(client.values()) / seconds, 2),
        "idle_detail": {"commandstats": calls, "client": client},
    }


def timed_first() -> tuple[Callable[[], None], Callable[[], float | None]]:
    """A marker for the first handler call: (mark, get)."""
    box: list[float] = []

    def mark() -> None:
        if not box:
            box.append(time.perf_counter())

    return mark, lambda: box[0] if box else None


# ---- where the time goes (diagnostics per work run) -----------------------------------------


def _redis_cpu(info: str) -> float:
    vals = {}
    for line in info.splitlines():
        k, _, v = line.partition(":")
        vals[k] = v
    return float(vals.get("used_cpu_sys", 0)) + float(vals.get("used_cpu_user", 0))


class Phase:
    """Redis and client CPU over one work run. begin() resets commandstats; end(n) returns
    redis_cpu / client_cpu (cores busy, 1.0 = one core), redis_us_per_job (Redis CPU per job),
    calls_per_job (every command Redis ran, script-internal ones included) and
    scripts_per_job (EVALSHA/EVAL/FCALL calls, i.e. script round trips). Blocking, but quick;
    called outside the timed part."""

    def __init__(self, url: str) -> None:
        self.url = url

    def begin(self) -> None:
        self.r = Resp(self.url)
        self.r.cmd("CONFIG", "RESETSTAT")
        self.cpu0 = _redis_cpu(self.r.cmd("INFO", "cpu"))
        self.proc0 = time.process_time()
        self.t0 = time.perf_counter()

    def end(self, n: int) -> dict[str, float]:
        wall = time.perf_counter() - self.t0
        proc = time.process_time() - self.proc0
        cpu = _redis_cpu(self.r.cmd("INFO", "cpu")) - self.cpu0
        calls = commandstats_calls(self.r.cmd("INFO", "commandstats"))
        self.r.close()
        scripts = sum(v for k, v in calls.items() if k.split("|")[0] in ("evalsha", "eval", "fcall", "evalsha_ro", "eval_ro"))
        return {
            "redis_cpu": round(cpu / wall, 2),
            "client_cpu": round(proc / wall, 2),
            "redis_us_per_job": round(cpu * 1e6 / n, 1),
            "calls_per_job": round(sum(calls.values()) / n, 2),
            "scripts_per_job": round(scripts / n, 3),
        }
