"""deploy/monitoring/: the PrometheusRule and the Grafana dashboard are well-formed, and every
PromQL expression in them names only metrics the code exports (the components' Metrics
classes, the informers' and the pod cache's counters, the webhook's certificate expiry
collector, instantiated into a fresh registry,
with the counters' and histograms' suffixes)."""
import json
import os
import re
import tempfile

import pytest
import yaml
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.agent.runner import Metrics as AgentMetrics
from tacker_hwaffinity.controller.exposure import ExposureMetrics
from tacker_hwaffinity.controller.runner import Metrics as ControllerMetrics
from tacker_hwaffinity.kube.informer import InformerMetrics
from tacker_hwaffinity.kube.tlsreload import EXPIRY_METRIC, CertificateExpiry
from tacker_hwaffinity.webhook import certs
from tacker_hwaffinity.webhook.daemon import Metrics as WebhookMetrics
from tacker_hwaffinity.webhook.podcache import CacheMetrics

from controlplane import harness
from test_deploy_manifests import DEPLOY, _kubectl_kustomize, kustomize

MONITORING = os.path.join(DEPLOY, "monitoring")
SUFFIXES = {"counter": ("_total", "_created"), "histogram": ("_bucket", "_count", "_sum",
                                                             "_created"),
            "summary": ("_count", "_sum", "_created"), "gauge": ("",), "info": ("_info",)}
KEYWORDS = {"and", "or", "unless", "by", "without", "on", "ignoring", "group_left",
            "group_right", "bool", "offset", "inf", "nan", "le"}


def exported():
    """Every series name the components can export."""
    registry = CollectorRegistry()
    for cls in (AgentMetrics, WebhookMetrics, ControllerMetrics, ExposureMetrics,
                InformerMetrics, CacheMetrics):
        cls(registry)
    with tempfile.TemporaryDirectory() as tmp:      # what `webhook serve` registers
        issued = certs.issue([], ["127.0.0.1"], days=1)
        for name, data in (("tls.crt", issued.cert), ("tls.key", issued.key),
                           ("ca.crt", issued.ca)):
            with open(os.path.join(tmp, name), "wb") as f:
                f.write(data)
        registry.register(CertificateExpiry(os.path.join(tmp, "tls.crt"),
                                            os.path.join(tmp, "tls.key"),
                                            client_ca=os.path.join(tmp, "ca.crt")))
    names = set()
    for family in registry.collect():
        names.update(family.name + s for s in SUFFIXES.get(family.type, ("",)))
    return names


def metric_names(expr):
    """The metric names an expression selects (a light PromQL reading: strings, label
    matchers, ranges, grouping clauses, functions and Grafana variables left out)."""
    expr = re.sub(r'"(?:[^"\\]|\\.)*"', "", expr)
    expr = re.sub(r"\{[^}]*\}", "", expr)
    expr = re.sub(r"\[[^\]]*\]", "", expr)
    expr = re.sub(r"\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", "",
                  expr)
    expr = re.sub(r"\$\{?\w+\}?", "", expr)
    names = set()
    for m in re.finditer(r"(?<![\w.])([A-Za-z_:][\w:]*)\s*(\()?", expr):
        if m.group(2) or m.group(1).lower() in KEYWORDS:
            continue
        names.add(m.group(1))
    return names


def _rule():
    with open(os.path.join(MONITORING, "prometheusrule.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    assert len(docs) == 1
    return docs[0]


def _dashboard():
    with open(os.path.join(MONITORING, "grafana-dashboard.json")) as f:
        return json.load(f)


def _dashboard_exprs(d):
    for panel in d["panels"]:
        for target in panel.get("targets") or ():
            yield "panel %r" % panel["title"], target["expr"]
    for var in d["templating"]["list"]:
        if var["type"] == "query":
            m = re.fullmatch(r"label_values\((\w+),\s*\w+\)", var["query"])
            assert m, var["query"]
            yield "variable %s" % var["name"], m.group(1)


def test_the_reader_finds_the_metrics_of_an_expression():
    """The check below can fail: this reading sees what an expression selects."""
    assert metric_names('sum by (node) (rate(hwaffinity_x_total{a="b",c=~"d|e"}[5m])) > 0 '
                        'and on (node) up offset 5m') == {"hwaffinity_x_total", "up"}
    assert metric_names("topk(10, hwaffinity_y{namespace=~\"$namespace\"}) > $threshold") \
        == {"hwaffinity_y"}
    assert "hwaffinity_workload_host_loss_ratio" in exported()
    assert "hwaffinity_controller_poll_seconds_count" in exported()
    assert "hwaffinity_controller_relabels_total" in exported()
    assert "hwaffinity_controller_relabels" not in exported()


def test_every_alert_is_complete_and_names_exported_metrics():
    rule, names = _rule(), exported()
    assert (rule["apiVersion"], rule["kind"]) == ("monitoring.coreos.com/v1", "PrometheusRule")
    alerts = [r for g in rule["spec"]["groups"] for r in g["rules"]]
    assert {a["alert"] for a in alerts} >= {"HwaffinityHostExposure", "HwaffinityStaleHostLabel"}
    for a in alerts:
        assert re.fullmatch(r"\d+[smh]", a["for"]), a["alert"]
        assert a["labels"]["severity"] in ("critical", "warning", "info"), a["alert"]
        assert {"summary", "description", "runbook"} <= set(a["annotations"]), a["alert"]
        used = metric_names(a["expr"])
        assert used, a["alert"]
        assert used <= names, "%s: %s not exported" % (a["alert"], sorted(used - names))
    exposure = next(a for a in alerts if a["alert"] == "HwaffinityHostExposure")
    assert "hwaffinity_workload_host_loss_ratio" in metric_names(exposure["expr"])
    stale = next(a for a in alerts if a["alert"] == "HwaffinityStaleHostLabel")
    assert metric_names(stale["expr"]) == {"hwaffinity_node_label_stale"}


def test_the_certificate_alerts_warn_at_30_days_and_page_at_7():
    """On the gauge the webhook exports, with its label, at the documented thresholds."""
    alerts = {r["alert"]: r for g in _rule()["spec"]["groups"] for r in g["rules"]}
    assert EXPIRY_METRIC in exported()
    for name, severity, days in (("HwaffinityWebhookCertificateExpiresSoon", "warning", 30),
                                 ("HwaffinityWebhookCertificateExpiresVerySoon", "critical",
                                  7)):
        a = alerts[name]
        assert metric_names(a["expr"]) == {EXPIRY_METRIC}, name
        assert a["labels"]["severity"] == severity
        assert re.search(r"- time\(\) < %d \* 86400\s*$" % days, a["expr"]), a["expr"]
        assert "by (namespace, pod, certificate)" in a["expr"]
        assert "{{ $labels.certificate }}" in a["annotations"]["summary"]


def test_every_dashboard_query_names_exported_metrics():
    d, names = _dashboard(), exported()
    ids = [p["id"] for p in d["panels"]]
    assert len(ids) == len(set(ids)) and d["uid"] and d["title"]
    seen = set()
    for where, expr in _dashboard_exprs(d):
        used = metric_names(expr)
        assert used, where
        assert used <= names, "%s: %s not exported" % (where, sorted(used - names))
        seen |= used
    assert {"hwaffinity_workload_host_loss_ratio", "hwaffinity_node_label_stale",
            "hwaffinity_workload_intent_met"} <= seen


def test_monitoring_has_its_own_kustomization_outside_the_apply_path():
    assert [p for p, _ in kustomize(MONITORING)] == ["monitoring/prometheusrule.yaml"]
    with open(os.path.join(DEPLOY, "kustomization.yaml")) as f:
        assert "monitoring" not in yaml.safe_load(f)["resources"]
    kubectl = os.path.join(harness.kube_bin_dir(), "kubectl")
    if os.access(kubectl, os.X_OK):
        status, out = _kubectl_kustomize(kubectl, MONITORING)
        assert status == 0, out
        assert [(d["kind"], d["metadata"]["name"]) for d in out] == [("PrometheusRule",
                                                                      "hwaffinity")]


@pytest.mark.parametrize("path", ["prometheusrule.yaml", "kustomization.yaml"])
def test_yaml_is_strict(path):
    """No duplicate keys (a second 'expr' would silently win)."""
    from tacker_hwaffinity.objects.yaml_strict import load_all
    with open(os.path.join(MONITORING, path)) as f:
        assert list(load_all(f.read()))
