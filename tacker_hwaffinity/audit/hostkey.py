"""Which node label names the physical host, and whether the host labels agree.

``hwaffinity audit --topology-key auto`` (the default) takes the first of ``HOST_KEYS``
that some node carries: ``CIS-node`` (the compute host's name, written by the
MgmtDriver, ``relabel`` and the controller), then ``topology.openstack.org/host-id``
(Nova's hostId, set by openstack-cloud-controller-manager and kept true by the
controller's ``--openstack-host-id-label``), then ``topology.scs.community/host-id``
(scs-0214, ``--scs-host-id-label``); ``CIS-node`` when no node carries any, and
then only Nova can say which nodes share a host (``check_carried``).

The keys name hosts differently (a host name, a per-project hash) but must group the
nodes alike: two nodes on one host under one key and on two under another means one of
the labels is stale (a move not followed) or the hostIds come from two projects.
``disagreements`` says so. Pure: Node objects in; strings, or an InputError, out.
"""
from collections.abc import Mapping, Sequence
from typing import Any

from tacker_hwaffinity.constants import (
    DEFAULT_HOST_LABEL, OPENSTACK_HOST_ID_LABEL, SCS_HOST_ID_LABEL)
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling.diagnosis import missing_label

AUTO = "auto"
HOST_KEYS = (DEFAULT_HOST_LABEL, OPENSTACK_HOST_ID_LABEL, SCS_HOST_ID_LABEL)
MAX_NAMED = 3           # disagreeing hosts named in one warning


def _labels(node_obj):
    return (node_obj.get("metadata") or {}).get("labels") or {}


def choose(node_objs: Sequence[Mapping[str, Any]], asked: str = AUTO) -> str:
    """The host key: ASKED unless it is ``auto``, else the first of HOST_KEYS some node
    of NODE_OBJS carries (``CIS-node`` when none does)."""
    if asked != AUTO:
        return asked
    carried = {k for n in node_objs for k in _labels(n) if k in HOST_KEYS}
    return next((k for k in HOST_KEYS if k in carried), DEFAULT_HOST_LABEL)


def check_carried(node_objs: Sequence[Mapping[str, Any]], key: str, asked: str = AUTO
                  ) -> None:
    """InputError when no node of NODE_OBJS carries the host KEY (ASKED: what
    --topology-key said): which nodes share a physical host is then unknown, and every
    gate would pass by counting each node as a host of its own."""
    label_keys = {k for n in node_objs for k in _labels(n)}
    if not node_objs or key in label_keys:
        return
    if asked == AUTO:
        raise InputError(
            "no node carries a host label (%s): which nodes share a physical host is "
            "unknown; label them (hwaffinity relabel), ask Nova (--openstack), or name the "
            "key (kubernetes.io/hostname: each node a host of its own)"
            % ", ".join(HOST_KEYS), field="--topology-key")
    raise InputError(missing_label(key, label_keys), field="--topology-key")


def _split(node_objs, key, other):
    """[(KEY's value, {OTHER's value: [node]})] of the KEY hosts whose nodes OTHER puts
    on two hosts or more (nodes carrying both keys only)."""
    groups = {}
    for n in node_objs:
        labels = _labels(n)
        if key in labels and other in labels:
            groups.setdefault(labels[key], {}).setdefault(labels[other], []).append(
                (n.get("metadata") or {}).get("name"))
    return sorted((v, parts) for v, parts in groups.items() if len(parts) > 1)


def disagreements(node_objs: Sequence[Mapping[str, Any]],
                  keys: Sequence[str] = HOST_KEYS) -> list[str]:
    """Warnings, one per ordered pair of KEYS: the hosts one key names whose nodes the
    other spreads over several hosts."""
    out = []
    for key in keys:
        for other in keys:
            if other == key:
                continue
            split = _split(node_objs, key, other)
            if not split:
                continue
            shown = "; ".join("%s=%s: %s" % (key, value, ", ".join(
                "%s on %s=%s" % ("/".join(sorted(nodes)), other, v)
                for v, nodes in sorted(parts.items())))
                for value, parts in split[:MAX_NAMED])
            more = " and %d more" % (len(split) - MAX_NAMED) if len(split) > MAX_NAMED \
                else ""
            out.append("host labels disagree: %d host(s) of %s are several hosts by %s "
                       "(%s%s): a label not following a move, or hostIds of two projects"
                       % (len(split), key, other, shown, more))
    return out
