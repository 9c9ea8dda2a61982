"""The placement configuration: one typed value given to ``hwaffinity numa`` and the agent.

Both build it from the same flags (``add_placement_arguments``, ``from_args``), so the
offline plan (``hwaffinity numa plan``) decides what the agent on the node decides.
"""
import argparse
import dataclasses

from tacker_hwaffinity.numa.placement import Placer
from tacker_hwaffinity.numa.topology import Machine


@dataclasses.dataclass(frozen=True)
class PlacementConfig:
    """How the NUMA engine places containers (``numa.placement.Placer``'s options)."""

    prefer_isolated: bool = True
    """1-CPU Guaranteed containers prefer isolated CPUs (upstream's default)."""
    colocate_pods: bool = False
    """An implicit +10 affinity between the containers of a pod without annotations."""
    colocate_namespaces: bool = False
    """An implicit +10 affinity between the containers of a namespace."""

    def placer(self, machine: Machine, affinity_budget: float | None = None) -> Placer:
        """A ``Placer`` for MACHINE with these options; AFFINITY_BUDGET: the seconds one
        container's affinities may take (None: no limit)."""
        return Placer(machine, prefer_isolated=self.prefer_isolated,
                      colocate_pods=self.colocate_pods,
                      colocate_namespaces=self.colocate_namespaces,
                      affinity_budget=affinity_budget)


def add_colocation_arguments(parser: argparse.ArgumentParser) -> None:
    """``--colocate-pods`` and ``--colocate-namespaces`` (what ``numa explain`` reads)."""
    parser.add_argument("--colocate-pods", action="store_true",
                        help="implicit +10 affinity between containers of a pod without "
                             "annotations")
    parser.add_argument("--colocate-namespaces", action="store_true",
                        help="implicit +10 affinity between containers of a namespace")


def add_placement_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of a ``PlacementConfig`` (``from_args`` reads them): ``hwaffinity numa
    plan`` and ``hwaffinity agent`` both call this, so they take the same ones."""
    parser.add_argument("--no-prefer-isolated", action="store_true",
                        help="do not prefer isolated CPUs for 1-CPU Guaranteed containers")
    add_colocation_arguments(parser)


def from_args(args: argparse.Namespace) -> PlacementConfig:
    """The ``PlacementConfig`` of ARGS, parsed by a parser given ``add_placement_arguments``."""
    return PlacementConfig(prefer_isolated=not args.no_prefer_isolated,
                           colocate_pods=args.colocate_pods,
                           colocate_namespaces=args.colocate_namespaces)
