"""The plugin contract written in scheduling/plugins/__init__.py holds for every plugin."""
import os
import re

import numpy as np

from tacker_hwaffinity.scheduling import plugins, profile, registry
from tacker_hwaffinity.scheduling.framework import Framework
from tacker_hwaffinity.scheduling.plugins import PreFilterResult
from tacker_hwaffinity.scheduling.plugins.nodeaffinity import NodeAffinity
from tacker_hwaffinity.scheduling.snapshot import cluster_from_objects
from tacker_hwaffinity.scheduling.model import Pod
from tests.builders import node, pod


def test_the_registry_builds_every_modelled_plugin_under_its_own_name():
    assert set(registry.REGISTRY) == set(profile.MODELLED_FILTERS) | set(profile.MODELLED_SCORES)
    built = registry.plugins(profile.Profile(), registry.REGISTRY)
    for name, plugin in built.items():
        assert plugin.name == name
        assert hasattr(plugin, "filter") == (name in profile.MODELLED_FILTERS)
        assert hasattr(plugin, "scores") == (name in profile.MODELLED_SCORES)


def test_no_plugin_keeps_state_keyed_by_a_states_identity():
    # a plugin keeps its per-state data in state.data(name), per-cycle in cycle.data(name)
    folder = os.path.dirname(plugins.__file__)
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py"):
            with open(os.path.join(folder, name)) as f:
                text = f.read()
            assert not re.search(r"id\((cycle\.)?state\)|id\(cycle\)", text), name


class OnlyNodes:
    """A plugin whose PreFilter narrows the nodes (as upstream's PreFilterResult)."""

    def __init__(self, name, names):
        self.name, self.names = name, names

    def prefilter(self, cycle):
        return PreFilterResult.only(self.name, self.names)

    def filter(self, cycle):
        return None


def _evaluate(filters, incoming):
    objs = [node("n%d" % i) for i in range(4)]
    state = cluster_from_objects([(o, "t") for o in objs]).state()
    return Framework(filters, []).evaluate(state, Pod.parse(incoming, created=True))


def test_prefilter_results_intersect_and_the_framework_names_the_plugins():
    ev = _evaluate([NodeAffinity(), OnlyNodes("NarrowB", {"n0", "n1", "n2"}),
                    OnlyNodes("NarrowA", {"n1", "n2", "n3"})], pod("p"))
    assert ev.feasible.tolist() == [False, True, True, False]   # the filters pass all
    assert ev.prefilter_absent.tolist() == [True, False, False, True]
    assert ev.absent_reason == "node(s) didn't satisfy plugin(s) [NarrowA NarrowB]"


def test_a_prefilter_that_rejects_fails_every_node_with_its_message():
    ev = _evaluate([NodeAffinity()], pod("p", affinity={"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["a"]},
                             {"key": "metadata.name", "operator": "In", "values": ["b"]}]}]}}}))
    assert not np.any(ev.feasible)
    assert ev.summary() == "0/4 nodes are available: pod affinity terms conflict."
