"""A forked child gets ForkedError instead of hanging (TOOLCHAIN pitfall 2)."""

from __future__ import annotations

import os
import time

import tideq


def test_forked_child_gets_forked_error(queue, client, name):
    queue.push("g", b"x")  # the runtime now exists in this (parent) process
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: report through the pipe and the exit code, never return into pytest
        code = 1
        try:
            os.close(read_end)
            try:
                queue.push("g", b"y")
                os.write(write_end, b"no error")
            except tideq.ForkedError as e:
                again = tideq.CappedQueue(name + "-child", client)
                try:
                    again.len("g")
                except tideq.ForkedError:
                    os.write(write_end, f"{e.code}|{e}".encode())
                    code = 0
        except BaseException as e:  # noqa: BLE001
            os.write(write_end, repr(e).encode())
        finally:
            os._exit(code)
    os.close(write_end)
    deadline = time.monotonic() + 20
    while True:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            break
        if time.monotonic() > deadline:
            os.kill(pid, 9)
            os.waitpid(pid, 0)
            raise AssertionError("forked child hung")
        time.sleep(0.02)
    with os.fdopen(read_end, "rb") as f:
        report = f.read().decode()
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, report
    error_code, message = report.split("|", 1)
    assert error_code == "FORKED"
    assert "after forking" in message and "spawn" in message and "forkserver" in message
    assert queue.len("g") == 1  # the parent is unaffected
