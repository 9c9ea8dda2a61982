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
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.k8s.quantity import parse_quantity, value as qvalue
from tacker_hwaffinity.k8s.yamlio import type_name
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

    def __init__(self, cpus, nodes, isolated=(), reserved=(), name="machine"):
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
    def online(self):
        return frozenset(c for c, cpu in self.cpus.items() if cpu.online)

    @property
    def offline(self):
        return frozenset(c for c, cpu in self.cpus.items() if not cpu.online)

    def sockets(self):
        return sorted({cpu.socket for cpu in self.cpus.values() if cpu.online})

    def dies(self, socket):
        return sorted({cpu.die for cpu in self.cpus.values()
                       if cpu.online and cpu.socket == socket})

    def cpu_nodes(self):
        """NUMA nodes with online CPUs, by id."""
        return [n for _, n in sorted(self.nodes.items()) if n.cpus & self.online]

    def memory_only_nodes(self):
        return [n for _, n in sorted(self.nodes.items())
                if not (n.cpus & self.online) and n.memory > 0]

    def distance(self, a, b):
        d = self.nodes[a].distance.get(b)
        if d is not None:
            return d
        if a == b:
            return 10
        na, nb = self.nodes[a], self.nodes[b]
        return 11 if na.socket == nb.socket else 21

    def summary(self):
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


def machine_from_yaml(doc, source="machine"):
    """Build a Machine from the documented YAML mapping; errors name the field."""
    if not isinstance(doc, dict):
        raise _err("expected a mapping", source, "(top)")
    for k in doc:
        if k not in _TOP:
            raise _err("unknown field (expected one of %s)" % ", ".join(sorted(_TOP)), source, k)
    sockets = doc.get("sockets")
    if not isinstance(sockets, list) or not sockets:
        raise _err("expected a non-empty list of sockets", source, "sockets")
    tpc = _int(doc.get("threadsPerCore"), source, "threadsPerCore", 1)
    if tpc < 1:
        raise _err("must be at least 1", source, "threadsPerCore")
    layout = doc.get("threadLayout", "halves")
    if layout not in ("halves", "adjacent"):
        raise _err("expected halves or adjacent", source, "threadLayout")
    offline = _ids(doc.get("offline"), source, "offline")
    placement, nodes = {}, []
    for si, s in enumerate(sockets):
        f = "sockets[%d]" % si
        if not isinstance(s, dict) or set(s) - {"id", "nodes"}:
            raise _err("expected a mapping with id and nodes", source, f)
        sid = _int(s.get("id"), source, f + ".id", si)
        if not isinstance(s.get("nodes"), list) or not s["nodes"]:
            raise _err("expected a non-empty list of NUMA nodes", source, f + ".nodes")
        for ni, n in enumerate(s["nodes"]):
            nf = "%s.nodes[%d]" % (f, ni)
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
            nodes.append(NumaNode(nid, cpus, _memory(n.get("memory"), source, nf + ".memory")))
    for mi, m in enumerate(doc.get("memoryNodes") or []):
        mf = "memoryNodes[%d]" % mi
        if not isinstance(m, dict) or set(m) - {"id", "memory", "socket"}:
            raise _err("expected a mapping with id, memory, socket", source, mf)
        nodes.append(NumaNode(_int(m.get("id"), source, mf + ".id"), (),
                              _memory(m.get("memory"), source, mf + ".memory"),
                              socket=_int(m.get("socket"), source, mf + ".socket", 0), die=0))
    ids = [n.id for n in nodes]
    if len(set(ids)) != len(ids):
        raise _err("NUMA node ids must be unique", source, "sockets")
    dist = doc.get("distances")
    if dist is not None:
        order = sorted(ids)
        if (not isinstance(dist, list) or len(dist) != len(order)
                or any(not isinstance(r, list) or len(r) != len(order) for r in dist)):
            raise _err("expected a %dx%d matrix in node id order" % (len(order), len(order)),
                       source, "distances")
        by_id = {n.id: n for n in nodes}
        for i, row in enumerate(dist):
            for j, d in enumerate(row):
                by_id[order[i]].distance[order[j]] = _int(d, source, "distances[%d][%d]" % (i, j))
    n = len(placement)
    cpus = []
    for c, (sid, die, nid) in sorted(placement.items()):
        if tpc > 1 and layout == "adjacent":
            sib = [c - c % tpc + k for k in range(tpc)]
            if any(x not in placement for x in sib):
                sib = [c]
        elif tpc > 1 and n % tpc == 0:
            stride = n // tpc
            first = c % stride
            sib = [first + k * stride for k in range(tpc)]
            if any(x not in placement for x in sib):
                sib = [c]
        else:
            sib = [c]
        cpus.append(CPU(c, sid, die, min(sib), nid, c not in offline, sib))
    unknown = offline - set(placement)
    if unknown:
        raise _err("unknown CPUs %s" % sorted(unknown), source, "offline")
    isolated = _ids(doc.get("isolated"), source, "isolated")
    reserved = _ids(doc.get("reserved"), source, "reserved")
    for what, ids_ in (("isolated", isolated), ("reserved", reserved)):
        if ids_ - set(placement):
            raise _err("unknown CPUs %s" % sorted(ids_ - set(placement)), source, what)
    return Machine(cpus, nodes, isolated, reserved, str(doc.get("name") or source))
