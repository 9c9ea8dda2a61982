"""The controller's RequiredDuringExecution verdicts equal the engine's, on random clusters.

Both read the one evaluator (``scheduling.plugins.interpod``); what differs is the view
that feeds it: the controller counts running pods per domain and leaves the judged pod
out, the engine binds every pod in a ``ClusterState`` and unbinds the judged one (as
``hwaffinity audit`` does). A verdict is compared per anti-affinity term and for the
affinity terms together, on every pod with rules.
"""
import copy
import json

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from tacker_hwaffinity.controller.rules import Cluster, Rules, RunningPod
from tacker_hwaffinity.scheduling import annotations
from tacker_hwaffinity.scheduling.framework import Cycle
from tacker_hwaffinity.scheduling.plugins.interpod import AFFINITY, ANTI, InterPodAffinity
from tacker_hwaffinity.scheduling.snapshot import cluster_from_objects
from tests.builders import node, pod
from tests.scheduling.term_strategies import H, NAMESPACES, Z, pod_labels, term_lists


@st.composite
def cluster(draw):
    labels = st.fixed_dictionaries({}, optional={H: st.sampled_from(["h1", "h2", "h3"]),
                                                 Z: st.sampled_from(["a", "b"])})
    nodes = [node("n%d" % i, draw(labels)) for i in range(draw(st.integers(1, 5)))]
    names = [n["metadata"]["name"] for n in nodes]
    pods = []
    for i in range(draw(st.integers(1, 12))):
        p = pod("p%d" % i, draw(pod_labels), ns=draw(st.sampled_from(["default"] * 3 + ["other"])),
                on=draw(st.sampled_from(names)))
        if draw(st.integers(0, 2)):
            rde = {"podAntiAffinity": draw(term_lists(2)), "podAffinity": draw(term_lists(2))}
            p["metadata"]["annotations"] = {annotations.REQUIRED_DURING_EXECUTION:
                                            json.dumps(rde)}
        pods.append(p)
    return nodes, pods


def controller_verdicts(nodes, pods):
    running = []
    for p in pods:
        meta = p["metadata"]
        text = (meta.get("annotations") or {}).get(annotations.REQUIRED_DURING_EXECUTION)
        running.append(RunningPod(meta["namespace"], meta["name"], meta["labels"],
                                  p["spec"]["nodeName"], Rules.parse(text) if text else None))
    c = Cluster({n["metadata"]["name"]: n["metadata"]["labels"] for n in nodes}, running,
                {n["metadata"]["name"]: n["metadata"]["labels"] for n in NAMESPACES})
    return {(v.pod.key, v.kind if v.kind == "podAffinity" else v.field)
            for v in c.violations()}


def engine_verdicts(nodes, pods):
    snap = cluster_from_objects([(o, "t") for o in nodes + pods + NAMESPACES])
    state = snap.state()
    plugin, out = InterPodAffinity(), set()
    for p in snap.pods:
        i = state.index[p.node_name]
        key = "%s/%s" % (p.namespace, p.name)
        state.unbind(p, i)
        for k, t in enumerate(p.terms["required_anti"]):
            if _code(plugin, state, p, i, required_anti=(t,)) == ANTI:
                out.add((key, "podAntiAffinity[%d]" % k))
        affinity = p.terms["required_affinity"]
        keyed = all(t.topology_key in state.nodes[i].labels for t in affinity)
        if affinity and keyed and _code(plugin, state, p, i,
                                        required_affinity=affinity) == AFFINITY:
            out.add((key, "podAffinity"))   # judged where the node has every key
        state.restore(p, i)
    return out


def _code(plugin, state, p, i, **terms):
    judged = copy.copy(p)
    judged.terms = dict({k: () for k in p.terms}, **terms)
    r = plugin.filter_own(Cycle(state, judged))
    return 0 if r is None else int(r.codes[i])


@pytest.mark.slow
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cluster())
def test_controller_verdicts_equal_the_engines(sc):
    nodes, pods = sc
    assert controller_verdicts(nodes, pods) == engine_verdicts(nodes, pods)
