"""The plugins the engine models, by kube-scheduler name: how each is built from a
``profile.Profile`` (its plugin arguments). The framework knows no plugin by name;
a new plugin is one entry here and its name in ``profile.MODELLED_FILTERS`` or
``MODELLED_SCORES`` (the contract: ``plugins/__init__.py``)."""
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from tacker_hwaffinity.scheduling.plugins import Plugin, basic, noderesources
from tacker_hwaffinity.scheduling.plugins.imagelocality import ImageLocality
from tacker_hwaffinity.scheduling.plugins.interpod import InterPodAffinity
from tacker_hwaffinity.scheduling.plugins.nodeaffinity import NodeAffinity
from tacker_hwaffinity.scheduling.plugins.topologyspread import PodTopologySpread

if TYPE_CHECKING:   # the profile builds its framework here: named for types only
    from tacker_hwaffinity.scheduling.profile import Profile

REGISTRY: dict[str, Callable[["Profile"], Plugin]] = {
    "NodeUnschedulable": lambda p: basic.NodeUnschedulable(),
    "NodeName": lambda p: basic.NodeName(),
    "TaintToleration": lambda p: basic.TaintToleration(),
    "NodeAffinity": lambda p: NodeAffinity(p.added_required, p.added_preferred),
    "NodeResourcesFit": lambda p: noderesources.NodeResourcesFit(**p.fit),
    "PodTopologySpread": lambda p: PodTopologySpread(p.spread_defaults,
                                                     p.spread_system_defaulted),
    "InterPodAffinity": lambda p: InterPodAffinity(p.hard_weight, p.ignore_existing_preferred),
    "NodeResourcesBalancedAllocation":
        lambda p: noderesources.NodeResourcesBalancedAllocation(p.balanced_resources),
    "ImageLocality": lambda p: ImageLocality(),
}


def plugins(profile: "Profile", names: Iterable[str]) -> dict[str, Plugin]:
    """{name: plugin} for NAMES, each built once from PROFILE."""
    return {name: REGISTRY[name](profile) for name in dict.fromkeys(names)}
