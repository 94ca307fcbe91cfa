"""docs/metrics.md's "Autoscaling" manifests, tested as far as this machine allows (no Kubernetes
here): every YAML block parses, each object has the fields its kind needs (the worker's probes on
its ``--health`` port, the KEDA trigger's query on the latency gauge of one queue, the HPA's
external metric), and the query's selector, evaluated against a real exporter's scrape, finds the
gauge with that queue label."""

from __future__ import annotations

import pathlib
import re
import subprocess
import urllib.request
import uuid
from typing import Any

import yaml

import tideq
from tideq_harness import free_port, stop_process, wait_for
from test_cli import tideq_command

DOC = pathlib.Path(__file__).resolve().parents[2] / "docs" / "metrics.md"
GAUGE = "tideq_queue_latency_seconds"


def autoscaling_documents() -> list[dict[str, Any]]:
    """Every YAML document of the page's Autoscaling section, in order."""
    text = DOC.read_text()
    section = text[text.index("\n## Autoscaling\n"):]
    blocks = re.findall(r"^```yaml\n(.*?)^```$", section, flags=re.S | re.M)
    assert len(blocks) == 3, "the Deployments, the ScaledObject, the adapter rule and HPA"
    return [d for b in blocks for d in yaml.safe_load_all(b)]


def by_kind(kind: str) -> list[dict[str, Any]]:
    return [d for d in autoscaling_documents() if d.get("kind") == kind]


def selector(query: str) -> tuple[str, dict[str, str]]:
    """The metric name and label matchers (`=` only) of the one selector in a PromQL query."""
    m = re.search(r"([a-zA-Z_:][\w:]*)\{([^}]*)\}", query)
    assert m, query
    labels = dict(re.findall(r'(\w+)\s*=\s*"([^"]*)"', m.group(2)))
    return m.group(1), labels


def samples(text: str, name: str) -> list[tuple[dict[str, str], float]]:
    """The samples of `name` in a Prometheus text scrape: (labels, value)."""
    out = []
    for line in text.splitlines():
        m = re.match(rf"^{re.escape(name)}\{{([^}}]*)\}} (\S+)$", line)
        if m:
            out.append((dict(re.findall(r'(\w+)="([^"]*)"', m.group(1))), float(m.group(2))))
    return out


def test_the_worker_deployment_probes_livez_and_readyz_on_its_health_port() -> None:
    deployments = {d["metadata"]["name"]: d for d in by_kind("Deployment")}
    assert all(d["apiVersion"] == "apps/v1" for d in deployments.values())
    worker = deployments["emails-worker"]["spec"]
    assert worker["selector"]["matchLabels"] == worker["template"]["metadata"]["labels"]
    (c,) = worker["template"]["spec"]["containers"]
    assert c["command"][:3] == ["tideq", "worker", "app.tasks:queue"]
    health = c["command"][c["command"].index("--health") + 1]
    assert health == "0.0.0.0:8080", "reachable by the kubelet, not loopback"
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports[c["livenessProbe"]["httpGet"]["port"]] == int(health.rsplit(":", 1)[1])
    assert c["livenessProbe"]["httpGet"]["path"] == "/livez"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert c["readinessProbe"]["httpGet"]["port"] == c["livenessProbe"]["httpGet"]["port"]
    exporter = deployments["tideq-exporter"]["spec"]["template"]["spec"]["containers"][0]
    assert exporter["command"][:2] == ["tideq", "exporter"]
    assert exporter["command"][exporter["command"].index("--listen") + 1] == "0.0.0.0:9464"


def test_the_keda_scaledobject_scales_the_worker_on_one_queues_latency_gauge() -> None:
    (so,) = by_kind("ScaledObject")
    assert so["apiVersion"] == "keda.sh/v1alpha1"
    assert so["spec"]["scaleTargetRef"]["name"] == "emails-worker"
    assert so["spec"]["minReplicaCount"] == 0, "scale from zero: the gauge is read with no worker"
    (trigger,) = so["spec"]["triggers"]
    assert trigger["type"] == "prometheus" and trigger["metricType"] == "Value"
    meta = trigger["metadata"]
    assert meta["serverAddress"].startswith("http")
    assert float(meta["threshold"]) > 0 and float(meta["activationThreshold"]) >= 0
    assert isinstance(meta["threshold"], str), "KEDA's metadata values are strings"
    assert selector(meta["query"]) == (GAUGE, {"queue": "emails"})


def test_the_hpa_alternative_reads_the_gauge_as_an_external_metric() -> None:
    (hpa,) = by_kind("HorizontalPodAutoscaler")
    assert hpa["apiVersion"] == "autoscaling/v2"
    assert hpa["spec"]["scaleTargetRef"] == {"apiVersion": "apps/v1", "kind": "Deployment", "name": "emails-worker"}
    (m,) = hpa["spec"]["metrics"]
    assert m["type"] == "External"
    assert m["external"]["metric"] == {"name": GAUGE, "selector": {"matchLabels": {"queue": "emails"}}}
    assert m["external"]["target"]["type"] == "Value" and float(m["external"]["target"]["value"]) > 0
    (rules,) = [d for d in autoscaling_documents() if "externalRules" in d]
    (rule,) = rules["externalRules"]
    assert selector(rule["seriesQuery"])[0] == GAUGE


def test_the_documented_query_finds_the_gauge_in_a_real_exporter_scrape(redis_url: str) -> None:
    (so,) = by_kind("ScaledObject")
    name, labels = selector(so["spec"]["triggers"][0]["metadata"]["query"])
    # The queue the query names ("emails"), under a prefix of this test's own.
    prefix = f"t{uuid.uuid4().hex[:12]}"
    q = tideq.Queue(labels["queue"], tideq.Client(redis_url, prefix=prefix))
    q.enqueue(b"waiting")
    port = free_port()
    proc = subprocess.Popen(
        [*tideq_command(), "--url", redis_url, "--prefix", prefix, "exporter",
         "--listen", f"127.0.0.1:{port}", "--refresh", "0.2"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        found: list[float] = []

        def scrape() -> bool:
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2).read().decode()
            except OSError:
                return False
            found[:] = [v for ls, v in samples(text, name) if all(ls.get(k) == lv for k, lv in labels.items())]
            return bool(found) and found[0] > 0

        assert wait_for(scrape, timeout=15), f"no {name}{labels} above 0 in the scrape"
        (value,) = found
        assert 0 < value <= q.stats().latency, "the gauge is the queue's latency, as stats() reads it"
    finally:
        stop_process(proc)
