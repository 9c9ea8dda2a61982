"""Hardware topology discovery from a sysfs tree (the engine's only I/O).

Reads the files upstream reads (``pkg/sysfs/system.go``) under ROOT
(``/sys`` on a live machine, a recorded tree in tests):

* ``devices/system/cpu/cpuN/online`` (absent means online; the topology of
  offline CPUs is not read), ``topology/{physical_package_id,die_id,core_id,
  thread_siblings_list}`` (``die_id`` optional), the ``nodeM`` entry;
* ``devices/system/cpu/isolated``;
* ``devices/system/node/nodeN/{cpulist,distance,meminfo}``.
"""
import os
import re
from typing import Optional

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.numa.cpuset import parse_list
from tacker_hwaffinity.numa.topology import CPU, Machine, NumaNode

_CPU_DIR = re.compile(r"^cpu([0-9]+)$")
_NODE_DIR = re.compile(r"^node([0-9]+)$")
_MEMTOTAL = re.compile(r"^Node\s+[0-9]+\s+MemTotal:\s+([0-9]+)\s*kB", re.M)


def _read(path, root, required=True):
    try:
        with open(path, encoding="ascii") as f:
            return f.read().strip()
    except FileNotFoundError:
        if required:
            raise InputError("missing sysfs file", source=root,
                             field=os.path.relpath(path, root))
        return None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError("cannot read sysfs file: %s" % e, source=root,
                         field=os.path.relpath(path, root))


def _int(path, root, required=True, default=None):
    text = _read(path, root, required)
    if text is None:
        return default
    try:
        return int(text)
    except ValueError:
        raise InputError("expected an integer, got %r" % text[:40], source=root,
                         field=os.path.relpath(path, root))


def _list(path, root, required=True):
    text = _read(path, root, required)
    if text is None:
        return set()
    try:
        return parse_list(text)
    except ValueError as e:
        raise InputError(str(e), source=root, field=os.path.relpath(path, root))


def _entries(path, pattern):
    try:
        names = os.listdir(path)
    except OSError:
        return []
    out = []
    for name in names:
        m = pattern.match(name)
        if m:
            out.append((int(m.group(1)), os.path.join(path, name)))
    return sorted(out)


def _cpu(cid, d, root, numa):
    """CPU CID from its directory D (the topology of an offline CPU is not read); NUMA
    says whether the tree has node directories (else every CPU is on node 0)."""
    online = _int(os.path.join(d, "online"), root, False, 1) != 0
    nodes = [n for n, _ in _entries(d, _NODE_DIR)] if numa else [0]
    node = nodes[0] if len(nodes) == 1 else None
    if not online:
        return CPU(cid, online=False, node=node)
    if len(nodes) != 1:
        raise InputError("CPU %d has %d NUMA node entries, expected exactly one"
                         % (cid, len(nodes)), source=root,
                         field=os.path.relpath(d, root))
    topo = os.path.join(d, "topology")
    socket = _int(os.path.join(topo, "physical_package_id"), root)
    die = _int(os.path.join(topo, "die_id"), root, False, 0)
    core = _int(os.path.join(topo, "core_id"), root)
    sib = _list(os.path.join(topo, "thread_siblings_list"), root, False) or {cid}
    return CPU(cid, socket, die, (socket, die, core), node, True, sib)


def _node(nid, d, root, online):
    """NUMA node NID from its directory D, with the CPUs of its cpulist that are ONLINE."""
    cpulist = _list(os.path.join(d, "cpulist"), root) & online
    row = _read(os.path.join(d, "distance"), root, False)
    distance = {}
    if row:
        try:
            distance = {i: int(x) for i, x in enumerate(row.split())}
        except ValueError:
            raise InputError("expected integers", source=root,
                             field=os.path.relpath(os.path.join(d, "distance"), root))
    meminfo = _read(os.path.join(d, "meminfo"), root, False) or ""
    m = _MEMTOTAL.search(meminfo)
    memory = int(m.group(1)) * 1024 if m else 0
    return NumaNode(nid, cpulist, memory, distance)


def _threads_and_cores(cpus, online):
    """Keep only the ONLINE threads as siblings, and make the core ids of the online CPUS
    globally unique (the lowest sibling's id)."""
    for c in cpus:
        if c.online:
            c.siblings = tuple(sorted(set(c.siblings) & online)) or (c.id,)
    cores = {}
    for c in sorted(cpus, key=lambda c: c.id):
        if c.online:
            c.core = cores.setdefault(c.core, min(c.siblings))


def discover(root: str = "/sys") -> Machine:
    """Return the Machine described by the sysfs tree at ROOT."""
    cpu_base = os.path.join(root, "devices", "system", "cpu")
    node_base = os.path.join(root, "devices", "system", "node")
    cpu_dirs = _entries(cpu_base, _CPU_DIR)
    if not cpu_dirs:
        raise InputError("no CPUs found (expected devices/system/cpu/cpuN directories)",
                         source=root)
    numa = bool(_entries(node_base, _NODE_DIR))
    cpus = [_cpu(cid, d, root, numa) for cid, d in cpu_dirs]
    online = {c.id for c in cpus if c.online}
    _threads_and_cores(cpus, online)
    nodes = [_node(nid, d, root, online) for nid, d in _entries(node_base, _NODE_DIR)]
    if not nodes:     # a kernel without NUMA: one node with every online CPU
        nodes.append(NumaNode(0, online, 0))
        for c in cpus:
            c.node = 0
    known = {n.id for n in nodes}
    for c in cpus:
        if c.online and c.node not in known:
            raise InputError("CPU %d is on NUMA node %s which has no node directory"
                             % (c.id, c.node), source=root)
    by_node = {n.id: n for n in nodes}
    for c in cpus:
        if c.online and c.id not in by_node[c.node].cpus:
            by_node[c.node].cpus = by_node[c.node].cpus | {c.id}
    for n in nodes:
        n.distance = {i: d for i, d in n.distance.items() if i in known}
    isolated = _list(os.path.join(cpu_base, "isolated"), root, False) & online
    return Machine(cpus, nodes, isolated, (), name=_hostname(root))


def _hostname(root):
    return "sysfs:%s" % root


def load(root: str = "/sys", reserved_cpus: Optional[str] = None) -> Machine:
    """The machine under sysfs ROOT with RESERVED_CPUS (``Machine.reserve``), errors
    located at ROOT: how ``hwaffinity numa`` and the agent load the node they run on."""
    try:
        machine = discover(root)
    except InputError as e:
        raise e.located(root)
    if reserved_cpus is not None:
        machine.reserve(reserved_cpus)
    return machine
