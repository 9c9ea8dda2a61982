"""Hardware topology model and the hand-written machine YAML format.

Machine YAML (see doc/numa.md)::

    name: two-socket            # optional
    threadsPerCore: 2           # optional, default 1: CPU n and n + N/2 are siblings
    threadLayout: halves        # optional: "halves" (default, as above) or "adjacent"
                                # (CPUs 2k and 2k+1 are siblings, as in QEMU guests)
    sockets:
      - id: 0
        nodes:
          - {id: 0, cpus: "0-7,16-23", memory: 64Gi, die: 0}
      - id: 1
        nodes:
          - {id: 1, cpus: "8-15,24-31", memory: 64Gi}
    distances: [[10, 21], [21, 10]]   # optional; default 10 / 11 same socket / 21
    isolated: 4-5                     # optional (kernel isolcpus)
    offline: 31                       # optional
    reserved: 0                       # optional, CPUs for the reserved class
    memoryNodes:                      # optional CPU-less nodes (PMEM/HBM)
      - {id: 2, memory: 256Gi, socket: 0}
"""
import math
from collections.abc import Iterable
from typing import Any

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.quantity import parse_quantity, value as qvalue
from tacker_hwaffinity.objects.yamlio import type_name
from tacker_hwaffinity.numa.cpuset import parse_list


class CPU:
    __slots__ = ("id", "socket", "die", "core", "node", "online", "siblings")

    def __init__(self, cid, socket=0, die=0, core=None, node=0, online=True, siblings=None):
        self.id = cid
        self.socket = socket
        self.die = die
        self.core = cid if core is None else core
        self.node = node
        self.online = online
        self.siblings = tuple(sorted(siblings)) if siblings else (cid,)


class NumaNode:
    __slots__ = ("id", "cpus", "memory", "distance", "socket", "die")

    def __init__(self, nid, cpus=(), memory=0, distance=None, socket=None, die=None):
        self.id = nid
        self.cpus = frozenset(cpus)
        self.memory = memory
        self.distance = dict(distance or {})
        self.socket = socket
        self.die = die


class Machine:
    """Sockets, dies, NUMA nodes, CPUs; built by sysfs.py or from YAML."""

    def __init__(self, cpus: Iterable[CPU], nodes: Iterable[NumaNode],
                 isolated: Iterable[int] = (), reserved: Iterable[int] = (),
                 name: str = "machine"):
        self.cpus = {c.id: c for c in cpus}
        self.nodes = {n.id: n for n in nodes}
        self.isolated = frozenset(isolated)
        self.reserved = frozenset(reserved)
        self.name = name
        self._check()

    def _check(self):
        for n in self.nodes.values():
            for c in n.cpus:
                cpu = self.cpus.get(c)
                if cpu is None:
                    raise InputError("NUMA node %d lists unknown CPU %d" % (n.id, c))
                if n.socket is None:
                    n.socket, n.die = cpu.socket, cpu.die
                elif (n.socket, n.die) != (cpu.socket, cpu.die) and cpu.online:
                    raise InputError("NUMA node %d spans sockets or dies (%d/%d and %d/%d)"
                                     % (n.id, n.socket, n.die, cpu.socket, cpu.die))
        for a in self.nodes.values():
            for b in self.nodes.values():
                da, db = a.distance.get(b.id), b.distance.get(a.id)
                if da is not None and db is not None and da != db:
                    raise InputError("asymmetric NUMA distance: %d->%d is %d but %d->%d is %d"
                                     % (a.id, b.id, da, b.id, a.id, db))

    @property
    def online(self) -> frozenset[int]:
        return frozenset(c for c, cpu in self.cpus.items() if cpu.online)

    @property
    def offline(self) -> frozenset[int]:
        return frozenset(c for c, cpu in self.cpus.items() if not cpu.online)

    def sockets(self) -> list[int]:
        return sorted({cpu.socket for cpu in self.cpus.values() if cpu.online})

    def dies(self, socket: int) -> list[int]:
        return sorted({cpu.die for cpu in self.cpus.values()
                       if cpu.online and cpu.socket == socket})

    def cpu_nodes(self) -> list[NumaNode]:
        """NUMA nodes with online CPUs, by id."""
        return [n for _, n in sorted(self.nodes.items()) if n.cpus & self.online]

    def memory_only_nodes(self) -> list[NumaNode]:
        return [n for _, n in sorted(self.nodes.items())
                if not (n.cpus & self.online) and n.memory > 0]

    def distance(self, a: int, b: int) -> int:
        d = self.nodes[a].distance.get(b)
        if d is not None:
            return d
        if a == b:
            return 10
        na, nb = self.nodes[a], self.nodes[b]
        return 11 if na.socket == nb.socket else 21

    def reserve(self, text: str) -> None:
        """Set the reserved CPUs from ``--reserved-cpus``/``reservedSystemCPUs`` TEXT: a
        CPU list ("0-1,8") or a CPU quantity ("1500m": the lowest usable CPUs that hold
        it, as the kubelet's static policy picks them). InputError (field
        ``--reserved-cpus``) on a bad list, too many CPUs, or CPUs this machine lacks."""
        try:
            reserved = self._reserved_cpus(text.strip())
        except ValueError as e:
            raise InputError(str(e), field="--reserved-cpus")
        if reserved - set(self.cpus):
            raise InputError("unknown CPUs %s" % sorted(reserved - set(self.cpus)),
                             field="--reserved-cpus")
        self.reserved = frozenset(reserved)

    def _reserved_cpus(self, text: str) -> set[int]:
        if text.endswith("m") or "." in text:
            count = math.ceil(parse_quantity(text))
            pool = sorted(self.online - self.isolated)
            if count > len(pool):
                raise ValueError("%s is more than the %d usable CPUs" % (text, len(pool)))
            return set(pool[:count])
        return set(parse_list(text))

    def summary(self) -> str:
        return ("%s: %d sockets, %d NUMA nodes, %d CPUs (%d online)"
                % (self.name, len(self.sockets()), len(self.cpu_nodes()), len(self.cpus),
                   len(self.online)))


def _err(msg, source, field):
    return InputError(msg, source=source, obj="Machine", field=field)


def _ids(value, source, field):
    try:
        return parse_list(value if value is not None else "")
    except ValueError as e:
        raise _err(str(e), source, field)


def _int(value, source, field, default=None):
    if value is None and default is not None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise _err("expected a non-negative integer, got %s" % type_name(value), source, field)
    return value


def _memory(value, source, field):
    if value is None:
        return 0
    try:
        return qvalue(parse_quantity(value))
    except ValueError as e:
        raise _err(str(e), source, field)


_TOP = {"kind", "apiVersion", "name", "threadsPerCore", "threadLayout", "sockets", "distances",
        "isolated", "offline", "reserved", "memoryNodes"}


def machine_from_yaml(doc: Any, source: str = "machine") -> Machine:
    """Build a Machine from the documented YAML mapping; errors name the field."""
    if not isinstance(doc, dict):
        raise _err("expected a mapping", source, "(top)")
    for k in doc:
        if k not in _TOP:
            raise _err("unknown field (expected one of %s)" % ", ".join(sorted(_TOP)), source, k)
    tpc = _int(doc.get("threadsPerCore"), source, "threadsPerCore", 1)
    if tpc < 1:
        raise _err("must be at least 1", source, "threadsPerCore")
    layout = doc.get("threadLayout", "halves")
    if layout not in ("halves", "adjacent"):
        raise _err("expected halves or adjacent", source, "threadLayout")
    offline = _ids(doc.get("offline"), source, "offline")
    placement, nodes = _sockets(doc.get("sockets"), source)
    nodes.extend(_memory_nodes(doc.get("memoryNodes") or [], source))
    ids = [n.id for n in nodes]
    if len(set(ids)) != len(ids):
        raise _err("NUMA node ids must be unique", source, "sockets")
    _distances(doc.get("distances"), nodes, source)
    cpus = [CPU(c, sid, die, min(sib), nid, c not in offline, sib)
            for (c, (sid, die, nid)), sib in zip(sorted(placement.items()),
                                                 _siblings(placement, tpc, layout))]
    isolated = _ids(doc.get("isolated"), source, "isolated")
    reserved = _ids(doc.get("reserved"), source, "reserved")
    for what, listed in (("offline", offline), ("isolated", isolated), ("reserved", reserved)):
        if listed - set(placement):
            raise _err("unknown CPUs %s" % sorted(listed - set(placement)), source, what)
    return Machine(cpus, nodes, isolated, reserved, str(doc.get("name") or source))


def _sockets(sockets, source):
    """({cpu: (socket, die, node)}, [NumaNode]) of the ``sockets`` list."""
    if not isinstance(sockets, list) or not sockets:
        raise _err("expected a non-empty list of sockets", source, "sockets")
    placement, nodes = {}, []
    for si, s in enumerate(sockets):
        f = "sockets[%d]" % si
        if not isinstance(s, dict) or set(s) - {"id", "nodes"}:
            raise _err("expected a mapping with id and nodes", source, f)
        sid = _int(s.get("id"), source, f + ".id", si)
        if not isinstance(s.get("nodes"), list) or not s["nodes"]:
            raise _err("expected a non-empty list of NUMA nodes", source, f + ".nodes")
        for ni, n in enumerate(s["nodes"]):
            nodes.append(_cpu_node(n, sid, placement, source, "%s.nodes[%d]" % (f, ni)))
    return placement, nodes


def _cpu_node(n, sid, placement, source, nf):
    """The NumaNode of one ``sockets[].nodes[]`` entry; its CPUs go into PLACEMENT."""
    if not isinstance(n, dict):
        raise _err("expected a mapping with id, cpus, memory, die", source, nf)
    extra = set(n) - {"id", "cpus", "memory", "die"}
    if extra:
        raise _err("unknown fields %s (expected id, cpus, memory, die; quote CPU "
                   "lists with commas inside {...})" % sorted(map(str, extra)), source, nf)
    nid = _int(n.get("id"), source, nf + ".id")
    die = _int(n.get("die"), source, nf + ".die", 0)
    cpus = _ids(n.get("cpus"), source, nf + ".cpus")
    if not cpus:
        raise _err("a NUMA node needs CPUs (use memoryNodes for CPU-less nodes)",
                   source, nf + ".cpus")
    for c in cpus:
        if c in placement:
            raise _err("CPU %d is listed twice" % c, source, nf + ".cpus")
        placement[c] = (sid, die, nid)
    return NumaNode(nid, cpus, _memory(n.get("memory"), source, nf + ".memory"))


def _memory_nodes(entries, source):
    """The CPU-less NumaNodes of ``memoryNodes``."""
    out = []
    for mi, m in enumerate(entries):
        mf = "memoryNodes[%d]" % mi
        if not isinstance(m, dict) or set(m) - {"id", "memory", "socket"}:
            raise _err("expected a mapping with id, memory, socket", source, mf)
        out.append(NumaNode(_int(m.get("id"), source, mf + ".id"), (),
                            _memory(m.get("memory"), source, mf + ".memory"),
                            socket=_int(m.get("socket"), source, mf + ".socket", 0), die=0))
    return out


def _distances(dist, nodes, source):
    """Fill each node's ``distance`` from the matrix DIST (rows in node id order)."""
    if dist is None:
        return
    order = sorted(n.id for n in nodes)
    if (not isinstance(dist, list) or len(dist) != len(order)
            or any(not isinstance(r, list) or len(r) != len(order) for r in dist)):
        raise _err("expected a %dx%d matrix in node id order" % (len(order), len(order)),
                   source, "distances")
    by_id = {n.id: n for n in nodes}
    for i, row in enumerate(dist):
        for j, d in enumerate(row):
            by_id[order[i]].distance[order[j]] = _int(d, source, "distances[%d][%d]" % (i, j))


def _siblings(placement, tpc, layout):
    """Per CPU in id order, its hyperthread siblings: ``adjacent`` (0,1 | 2,3) or
    ``halves`` (c and c + n/tpc); a CPU whose siblings are not all listed has none."""
    n = len(placement)
    for c in sorted(placement):
        if tpc > 1 and layout == "adjacent":
            sib = [c - c % tpc + k for k in range(tpc)]
        elif tpc > 1 and n % tpc == 0:
            stride = n // tpc
            sib = [c % stride + k * stride for k in range(tpc)]
        else:
            sib = [c]
        yield sib if all(x in placement for x in sib) else [c]
