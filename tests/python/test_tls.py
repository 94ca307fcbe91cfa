"""TLS through the Python binding: `tideq.Client(tls_ca=...)` trusts a private CA for `rediss://`,
against real TLS-only redis-servers (one lone server, and a Redis Cluster) whose certificates come
from a CA made here with the openssl CLI. The core's contract is core/tests/tls.rs (and the TLS
cluster test in core/tests/cluster.rs); these check that the option crosses into Python intact."""

from __future__ import annotations

import os
import pathlib
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from typing import Iterator, NamedTuple, Union

import pytest

import tideq
from tideq_harness import free_port, stop_process

ROOT = pathlib.Path(__file__).resolve().parents[2]
CLUSTER_SCRIPT = ROOT / "tests" / "cluster" / "redis-cluster.sh"
FAST = tideq.Backoff.fixed(0.05)


def skip_without_tls() -> None:
    """Skips (saying why) where the test command found the redis-server built without TLS
    (``TIDEQ_TEST_NO_TLS``, set by scripts/test-valkey.sh)."""
    why = os.environ.get("TIDEQ_TEST_NO_TLS")
    if why:
        pytest.skip(why)


def make_certs(folder: pathlib.Path) -> None:
    """A private CA (ca.pem) and a server certificate it signed for 127.0.0.1 and localhost
    (cert.pem, key.pem), as testing/src/server.rs `make_certs` makes them."""
    if shutil.which("openssl") is None:
        pytest.skip("the openssl command is not installed (it makes the test certificates)")
    (folder / "ext.cnf").write_text("subjectAltName=IP:127.0.0.1,DNS:localhost\n")
    for args in (
        "req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=tideq-test-ca -keyout ca.key -out ca.pem",
        "req -newkey rsa:2048 -nodes -subj /CN=localhost -keyout key.pem -out server.csr",
        "x509 -req -in server.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 1 -out cert.pem -extfile ext.cnf",
    ):
        done = subprocess.run(["openssl", *args.split(" ")], cwd=folder, capture_output=True, text=True)
        if done.returncode != 0:
            pytest.fail(f"openssl {args} failed:\n{done.stderr}")


class TlsServer(NamedTuple):
    url: str  # rediss://127.0.0.1:PORT
    ca: pathlib.Path  # the private CA that signed the server's certificate
    certs: pathlib.Path  # the folder holding ca.pem, cert.pem and key.pem


@pytest.fixture(scope="module")
def certs() -> Iterator[pathlib.Path]:
    folder = pathlib.Path(tempfile.mkdtemp(prefix="tideq-py-certs-"))
    try:
        make_certs(folder)
        yield folder
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def tls_server(certs: pathlib.Path) -> Iterator[TlsServer]:
    """A redis-server speaking TLS only (`--port 0`), not asking clients for certificates."""
    skip_without_tls()
    server = shutil.which("redis-server") or "/usr/bin/redis-server"
    workdir = tempfile.mkdtemp(prefix="tideq-py-tls-")
    log = os.path.join(workdir, "redis.log")
    port = free_port()
    proc = subprocess.Popen(
        [server, "--port", "0", "--tls-port", str(port), "--bind", "127.0.0.1",
         "--tls-cert-file", str(certs / "cert.pem"), "--tls-key-file", str(certs / "key.pem"),
         "--tls-ca-cert-file", str(certs / "ca.pem"), "--tls-auth-clients", "no",
         "--dir", workdir, "--save", "", "--appendonly", "no", "--logfile", log],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + 10
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                pass
            if proc.poll() is not None:
                out = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
                if os.path.exists(log):
                    out += pathlib.Path(log).read_text(errors="replace")
                if "tls" in out.lower() and ("bad directive" in out.lower() or "not supported" in out.lower()):
                    pytest.skip(f"this redis-server was built without TLS support:\n{out}")
                pytest.fail(f"the TLS redis-server exited ({proc.returncode}):\n{out}")
            if time.monotonic() > deadline:
                pytest.fail(f"the TLS redis-server did not listen on port {port}")
            time.sleep(0.02)
        yield TlsServer(f"rediss://127.0.0.1:{port}", certs / "ca.pem", certs)
    finally:
        stop_process(proc)
        if proc.stdout:
            proc.stdout.close()
        shutil.rmtree(workdir, ignore_errors=True)


def unique(what: str) -> str:
    return f"{what}-{uuid.uuid4().hex}"


@pytest.mark.parametrize("form", ["str path", "pathlib.Path", "bytes"])
def test_a_job_is_enqueued_and_processed_over_tls_trusting_the_private_ca(tls_server, form):
    ca: Union[bytes, str, pathlib.Path] = {
        "str path": str(tls_server.ca),
        "pathlib.Path": tls_server.ca,
        "bytes": tls_server.ca.read_bytes(),
    }[form]
    client = tideq.Client(tls_server.url, tls_ca=ca)
    q = tideq.Queue(unique("tls-jobs"), client, backoff=FAST)
    job_id = q.enqueue(b"over tls").id
    seen: list[tuple[str, bytes]] = []
    stats = q.run(lambda job: seen.append((job.id, job.payload)), poll_interval=0.1, stop_when_drained=True)
    assert stats.completed == 1
    assert seen == [(job_id, b"over tls")]


def test_a_capped_queue_pushes_and_pops_over_tls_trusting_the_private_ca(tls_server):
    client = tideq.Client(tls_server.url, tls_ca=tls_server.ca.read_bytes())
    capped = tideq.CappedQueue(unique("tls-capped"), client)
    capped.push("g", b"one")
    capped.push_many([("g", b"two"), ("h", b"three")])
    assert capped.pop_batch("g", 10) == [b"one", b"two"]
    assert capped.pop_batch("h", 10) == [b"three"]


def test_without_the_ca_the_servers_certificate_is_rejected_as_a_connection_error(tls_server):
    # Verification is really on: the public roots do not know the private CA.
    client = tideq.Client(tls_server.url)
    q = tideq.Queue(unique("tls-untrusted"), client)
    with pytest.raises(tideq.ConnectionError) as caught:
        q.enqueue(b"never sent")
    assert caught.value.code == "CONNECTION"
    assert "certificate" in str(caught.value).lower(), str(caught.value)


def test_a_ca_that_is_not_pem_is_invalid_argument():
    with pytest.raises(tideq.InvalidArgumentError) as caught:
        tideq.Client("rediss://127.0.0.1:1", tls_ca=b"not a pem")
    assert caught.value.code == "INVALID_ARGUMENT"
    assert "PEM" in str(caught.value)


def test_a_ca_file_that_cannot_be_read_is_invalid_argument_naming_the_path(tmp_path):
    missing = tmp_path / "no-such-ca.pem"
    for given in (str(missing), missing):
        with pytest.raises(tideq.InvalidArgumentError) as caught:
            tideq.Client("rediss://127.0.0.1:1", tls_ca=given)
        assert str(missing) in str(caught.value)
    # A folder is not a readable file either.
    with pytest.raises(tideq.InvalidArgumentError, match=str(tmp_path)):
        tideq.Client("rediss://127.0.0.1:1", tls_ca=tmp_path)


def test_pem_contents_given_as_str_are_invalid_argument_saying_to_pass_bytes(tls_server):
    pem = tls_server.ca.read_text()
    with pytest.raises(tideq.InvalidArgumentError, match="bytes"):
        tideq.Client(tls_server.url, tls_ca=pem)


@pytest.mark.parametrize("value", [123, bytearray(b"pem"), ["ca.pem"]])
def test_a_ca_of_another_type_is_a_type_error(value):
    with pytest.raises(TypeError, match="tls_ca must be bytes"):
        tideq.Client("rediss://127.0.0.1:1", tls_ca=value)


def test_a_tls_only_cluster_works_trusting_the_private_ca(certs):
    skip_without_tls()
    if not CLUSTER_SCRIPT.exists():
        pytest.skip(f"{CLUSTER_SCRIPT.relative_to(ROOT)} is not there (it starts the cluster)")
    workdir = tempfile.mkdtemp(prefix="tideq-py-tls-cluster-")
    try:
        started = subprocess.run(
            ["bash", str(CLUSTER_SCRIPT), "start", workdir],
            capture_output=True, text=True, timeout=60, env={**os.environ, "TIDEQ_CLUSTER_TLS": str(certs)},
        )
        if started.returncode != 0:
            pytest.fail(f"{CLUSTER_SCRIPT.name} start failed ({started.returncode}):\n{started.stdout}{started.stderr}")
        seeds = [f"rediss://{hostport}" for hostport in started.stdout.strip().splitlines()[-1].split(",")]
        client = tideq.Client(cluster=seeds, tls_ca=certs / "ca.pem")
        capped = tideq.CappedQueue(unique("tls-cluster-capped"), client, shards=3)
        capped.push_many([(f"g{i % 30}", b"%d" % i) for i in range(300)])
        got = 0
        while (batch := capped.next_batch(100)) is not None:
            got += len(batch[1])
        assert got == 300
        q = tideq.Queue(unique("tls-cluster-jobs"), client, backoff=FAST, shards=3)
        for i in range(30):
            q.enqueue(b"%d" % i)
        # Waits for the jobs rather than stop_when_drained, which can stop a sharded queue's
        # worker early (a core issue of its own, not a TLS one).
        worker = q.work(lambda job: None, poll_interval=0.1)
        try:
            deadline = time.monotonic() + 20
            while q.stats().completed < 30 and time.monotonic() < deadline:
                time.sleep(0.02)
        finally:
            stats = worker.shutdown()
        assert stats.completed == 30, (stats, q.stats())
    finally:
        subprocess.run(["bash", str(CLUSTER_SCRIPT), "stop", workdir], check=False, timeout=30)
