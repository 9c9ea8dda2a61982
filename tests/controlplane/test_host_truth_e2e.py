"""Host truth before scheduling, end to end (issue #55, item 1): the real control plane
and kube-scheduler, a Nova of two compute hosts (no Heat, no server metadata) and
`hwaffinity controller --cluster-nodes` as a process.

A node registers with the host-unknown taint and a providerID naming a Nova server (as a
kubelet with ``--register-with-taints`` and ``--provider-id`` does): a pod that can only
go there waits Pending, kube-scheduler naming the taint, until the controller
has labelled the node with Nova's host and lifted the taint; then it binds. A node whose
providerID names a server Nova does not have keeps the taint, with a Warning Event and the
gauge's ``no-server`` reason. One that registered without the taint (before the webhook's
configuration existed) and names such a server gets it; one with no OpenStack providerID
(a bare-metal node of a hybrid cluster) is left alone. ``kube.taints.lift``'s tests
against a node that changed run on the same API server.
"""
import os
import re
import sys
import urllib.request
import uuid

import pytest

from tacker_hwaffinity.constants import HOST_UNKNOWN_TAINT
from tacker_hwaffinity.kube import client as kube_client, taints

from . import harness
from .test_controller_e2e import _kill, _start, label

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "openstack"))
import osharness

pytestmark = pytest.mark.controlplane
UNKNOWN = {"key": HOST_UNKNOWN_TAINT, "effect": "NoSchedule"}
OTHER = {"key": "dedicated", "value": "cnf", "effect": "NoSchedule"}


@pytest.fixture(scope="module")
def cloud():
    """Nova with two compute hosts, for this module alone."""
    yield from osharness.own_cloud(2)


def _taints(cp, name):
    return cp.admin.get("/api/v1/nodes/" + name)["spec"].get("taints") or []


def _register(cp, name, provider_id, taints_=(UNKNOWN,)):
    """A node registered with TAINTS_ and PROVIDER_ID, as the kubelet's flags make it."""
    cp.add_node(name, {"kubernetes.io/hostname": name}, wait=False, taints=list(taints_))
    cp.admin.patch("/api/v1/nodes/" + name, {"spec": {"providerID": provider_id}})


def _pinned_pod(cp, name, node):
    """A pod only NODE can take (its hostname label), tolerating OTHER, not ours."""
    cp.admin.create("/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": node},
                 "tolerations": [dict(OTHER, operator="Equal")],
                 "containers": [{"name": "c", "image": "registry.invalid/app:1"}]}})


def _unschedulable_message(cp, name):
    pod = cp.admin.get("/api/v1/namespaces/default/pods/" + name)
    for cond in (pod.get("status") or {}).get("conditions") or ():
        if cond.get("type") == "PodScheduled" and cond.get("status") == "False":
            return cond.get("message") or ""
    return None


def _gauge(log, reason):
    port = re.search(r"metrics on [^\s:]+:(\d+)", log.read_text()).group(1)
    with urllib.request.urlopen("http://127.0.0.1:%s/metrics" % port, timeout=5) as r:
        text = r.read().decode()
    m = re.search(r'^hwaffinity_controller_nodes_host_unknown\{reason="%s"\} (\S+)$' % reason,
                  text, re.M)
    return float(m.group(1)) if m else None


def _events(cp, node, reason):
    got = cp.admin.get("/api/v1/namespaces/kube-system/events?fieldSelector=involvedObject.name="
                       + node)
    return [e["message"] for e in got["items"] if e.get("reason") == reason]


@pytest.mark.openstack
def test_a_pod_binds_only_once_the_controller_knows_the_node_s_host(
        cloud, control_plane, tmp_path):
    cp = control_plane
    tag = uuid.uuid4().hex[:4]
    host = sorted(cloud.hosts)[1]
    node, ghost, pod = "ht-w-" + tag, "ht-ghost-" + tag, "ht-pod-" + tag
    early, metal = "ht-early-" + tag, "ht-metal-" + tag
    missing, gone = "openstack:///%s" % uuid.uuid4(), "openstack:///%s" % uuid.uuid4()
    with osharness.servers_on_hosts(cloud, ["ht-%s" % tag], [host]) as placed:
        (server_id, _host, _ip), = placed
        proc = None
        try:
            _register(cp, node, "openstack:///%s" % server_id, (OTHER, UNKNOWN))
            _register(cp, ghost, missing)
            _register(cp, early, gone, ())
            cp.add_node(metal, {"kubernetes.io/hostname": metal}, wait=False)
            _pinned_pod(cp, pod, node)
            harness.wait_until(lambda: HOST_UNKNOWN_TAINT in (
                _unschedulable_message(cp, pod) or ""), 30,
                what="kube-scheduler to leave %s Pending on the taint" % pod)
            proc, log = _start(cloud, cp, tmp_path, "ht-controller", select=["--cluster-nodes"])
            harness.wait_until(lambda: UNKNOWN not in _taints(cp, node), 60,
                               what="the taint lifted from %s" % node)
            # labelled before the taint went: the pod can only land on a known host
            assert label(cp, node) == host and _taints(cp, node) == [OTHER]
            harness.wait_until(lambda: cp.admin.get(
                "/api/v1/namespaces/default/pods/" + pod)["spec"].get("nodeName") == node,
                60, what="%s bound to %s" % (pod, node))
            harness.wait_until(lambda: _events(cp, node, "HostKnown"), 10, what="HostKnown")
            # the ghost: no server behind its providerID, so its host stays unknown
            harness.wait_until(lambda: _events(cp, ghost, "HostUnknown"), 30,
                               what="a HostUnknown Event on %s" % ghost)
            assert _events(cp, ghost, "HostUnknown") == [
                "%s stays: its providerID %s names no worker server Nova lists to these "
                "credentials" % (HOST_UNKNOWN_TAINT, missing)]
            assert _taints(cp, ghost) == [UNKNOWN] and label(cp, ghost) is None
            # registered untainted: the controller adds it; the bare-metal node keeps none
            harness.wait_until(lambda: UNKNOWN in _taints(cp, early), 30,
                               what="the taint added to %s" % early)
            harness.wait_until(lambda: _events(cp, early, "HostUnknown"), 30,
                               what="a HostUnknown Event on %s" % early)
            assert _events(cp, early, "HostUnknown")[0] == (
                "%s added: its providerID %s names server %s, which Nova does not list to "
                "these credentials" % (HOST_UNKNOWN_TAINT, gone, gone.split("/")[-1]))
            assert _taints(cp, metal) == []
            assert _gauge(log, "no-server") >= 2
            assert proc.poll() is None, log.read_text()
        finally:
            if proc is not None:
                _kill(proc)
            cp.admin.request("DELETE", "/api/v1/namespaces/default/pods/" + pod,
                             ok=(200, 404))
            for name in (node, ghost, early, metal):
                cp.delete_node(name)


def test_a_patch_is_refused_when_the_node_changed_since_it_was_read(control_plane):
    """A lift tests the taint's index and the node's uid: a taint added before ours, or a
    node deleted and made again under its name, leaves the node as it is. An add tests
    the node's uid and resourceVersion."""
    cp = control_plane
    name = "ht-lift-" + uuid.uuid4().hex[:4]
    conn = kube_client.connect(cp.kubeconfig)
    try:
        _register(cp, name, "openstack:///x", (UNKNOWN,))
        read = cp.admin.get("/api/v1/nodes/" + name)
        uid, as_read = read["metadata"]["uid"], read["spec"]["taints"]
        cp.admin.patch("/api/v1/nodes/" + name, {"spec": {"taints": [OTHER, UNKNOWN]}})
        assert not taints.lift(conn, name, uid, as_read, HOST_UNKNOWN_TAINT)
        assert _taints(cp, name) == [OTHER, UNKNOWN]
        assert not taints.lift(conn, name, "another-uid", [OTHER, UNKNOWN],
                               HOST_UNKNOWN_TAINT)
        assert taints.lift(conn, name, uid, [OTHER, UNKNOWN], HOST_UNKNOWN_TAINT)
        assert _taints(cp, name) == [OTHER]
        assert not taints.lift(conn, name, uid, [OTHER], HOST_UNKNOWN_TAINT)
        assert not taints.add(conn, name, uid, read["metadata"]["resourceVersion"], [OTHER],
                              UNKNOWN)                    # read before the two patches
        now = cp.admin.get("/api/v1/nodes/" + name)["metadata"]["resourceVersion"]
        assert taints.add(conn, name, uid, now, [OTHER], UNKNOWN)
        assert _taints(cp, name) == [OTHER, UNKNOWN]
        cp.admin.patch("/api/v1/nodes/" + name, {"spec": {"taints": None}})
        now = cp.admin.get("/api/v1/nodes/" + name)["metadata"]["resourceVersion"]
        assert taints.add(conn, name, uid, now, None, UNKNOWN)
        assert _taints(cp, name) == [UNKNOWN]
    finally:
        conn.close()
        cp.delete_node(name)
