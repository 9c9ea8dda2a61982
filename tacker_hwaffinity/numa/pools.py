"""The topology-aware pool tree: root / socket / die / NUMA node (upstream crirm rules).

* a virtual ``root`` exists only with more than one socket;
* ``die #<pkg>/<die>`` pools only under sockets with at least two dies;
* one ``NUMA node #<n>`` per NUMA node with online CPUs, omitted when it would
  be the only CPU-ful NUMA child of its parent (the parent is then the leaf);
* CPU-less memory nodes get no pool; their memory goes to the closest pool by
  NUMA distance (ties: fewest attached, then lowest id);
* ids by a depth-first post-order walk (leaves low, root highest); depth is
  the distance from the root.
"""


class Pool:
    __slots__ = ("name", "kind", "parent", "children", "id", "depth", "cpus", "isolated",
                 "reserved", "sharable", "nodes", "mem_nodes", "memory", "hw_id")

    def __init__(self, name, kind, parent=None, hw_id=None):
        self.name = name
        self.kind = kind            # "root", "socket", "die", "numa"
        self.parent = parent
        self.children = []
        self.hw_id = hw_id
        self.id = -1
        self.depth = 0 if parent is None else parent.depth + 1
        self.nodes = set()          # NUMA nodes with CPUs under this pool
        self.mem_nodes = set()      # plus attached memory-only nodes
        self.cpus = frozenset()
        self.isolated = self.reserved = self.sharable = frozenset()
        self.memory = 0
        if parent is not None:
            parent.children.append(self)

    def __repr__(self):
        return "Pool(%s)" % self.name

    @property
    def is_leaf(self):
        return not self.children

    def ancestors(self):
        p = self.parent
        while p is not None:
            yield p
            p = p.parent

    def subtree(self):
        """This pool and all pools under it, breadth first."""
        out, i = [self], 0
        while i < len(out):
            out.extend(out[i].children)
            i += 1
        return out


def _post_order(pool, out):
    for c in pool.children:
        _post_order(c, out)
    out.append(pool)


def build_pools(machine):
    """Return the pools of MACHINE in id (post-order) order; the root is last."""
    sockets = machine.sockets()
    root = Pool("root", "root") if len(sockets) > 1 else None
    numa_parent = {}
    for s in sockets:
        sp = Pool("socket #%d" % s, "socket", root, s)
        if root is None:
            root = sp
        dies = machine.dies(s)
        for d in dies:
            parent = Pool("die #%d/%d" % (s, d), "die", sp, (s, d)) if len(dies) > 1 else sp
            nodes = [n for n in machine.cpu_nodes() if (n.socket, n.die) == (s, d)]
            for n in nodes:
                if len(nodes) < 2:
                    numa_parent[n.id] = parent
                else:
                    numa_parent[n.id] = Pool("NUMA node #%d" % n.id, "numa", parent, n.id)
    online = machine.online
    for nid, pool in numa_parent.items():
        node = machine.nodes[nid]
        for p in [pool] + list(pool.ancestors()):
            p.nodes.add(nid)
            p.cpus = p.cpus | (node.cpus & online)
    attached = {}
    leaves = {}
    for nid, pool in numa_parent.items():
        leaves.setdefault(pool, []).append(nid)
    for mn in machine.memory_only_nodes():
        best = None
        for pool, nids in sorted(leaves.items(), key=lambda kv: min(kv[1])):
            d = min(machine.distance(n, mn.id) for n in nids)
            key = (d, attached.get(pool, 0), min(nids))
            if best is None or key < best[0]:
                best = (key, pool)
        if best is not None:
            attached[best[1]] = attached.get(best[1], 0) + 1
            for p in [best[1]] + list(best[1].ancestors()):
                p.mem_nodes.add(mn.id)
    pools = []
    _post_order(root, pools)
    for i, p in enumerate(pools):
        p.id = i
        p.mem_nodes |= p.nodes
        p.memory = sum(machine.nodes[n].memory for n in p.mem_nodes)
        p.isolated = p.cpus & machine.isolated
        p.reserved = (p.cpus & machine.reserved) - p.isolated
        p.sharable = p.cpus - p.isolated - p.reserved
    return pools
