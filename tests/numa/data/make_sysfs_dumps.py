"""Regenerate the recorded sysfs dumps in this directory (run by hand, not by tests).

A dump is what ``grep -r . devices/system/{cpu,node}`` prints under a sysfs
root, one ``path:content`` line per file, plus one ``path/`` line per
directory entry that holds no file we read (the ``cpuN/nodeM`` links).
tests/numa/conftest.py expands a dump into a directory tree.
"""
import os

from tacker_hwaffinity.numa.cpuset import format_list as fmt


def dump(layout, threads, offline=(), isolated=(), with_die=True, mem_only=None, mem_kb=None):
    """LAYOUT: list of (socket, die, node, ncores). CPU numbering as Linux: first
    threads of every core, then the second threads."""
    cores = []
    for socket, die, node, n in layout:
        for k in range(n):
            cores.append((socket, die, node, k))
    ncores = len(cores)
    lines = []
    cpu_of = {}
    for t in range(threads):
        for i, (socket, die, node, k) in enumerate(cores):
            cpu_of[(i, t)] = t * ncores + i
    node_cpus = {}
    for (i, t), cpu in sorted(cpu_of.items(), key=lambda kv: kv[1]):
        socket, die, node, k = cores[i]
        base = "devices/system/cpu/cpu%d" % cpu
        if cpu != 0:
            lines.append("%s/online:%d" % (base, 0 if cpu in offline else 1))
        lines.append("%s/node%d/" % (base, node))
        if cpu in offline:
            continue
        node_cpus.setdefault(node, []).append(cpu)
        sib = [cpu_of[(i, tt)] for tt in range(threads) if cpu_of[(i, tt)] not in offline]
        lines.append("%s/topology/physical_package_id:%d" % (base, socket))
        if with_die:
            lines.append("%s/topology/die_id:%d" % (base, die))
        lines.append("%s/topology/core_id:%d" % (base, k))
        lines.append("%s/topology/thread_siblings_list:%s" % (base, fmt(sib)))
    allcpus = sorted(cpu_of.values())
    lines.append("devices/system/cpu/online:%s" % fmt(set(allcpus) - set(offline)))
    lines.append("devices/system/cpu/possible:%s" % fmt(allcpus))
    lines.append("devices/system/cpu/isolated:%s" % fmt(isolated))
    nodes = sorted({c[2] for c in layout} | ({mem_only[0]} if mem_only else set()))
    sock = {c[2]: c[0] for c in layout}
    for n in nodes:
        base = "devices/system/node/node%d" % n
        lines.append("%s/cpulist:%s" % (base, fmt(node_cpus.get(n, []))))
        row = []
        for m in nodes:
            if m == n:
                row.append(10)
            elif mem_only and mem_only[0] in (m, n):
                other = n if m == mem_only[0] else m
                row.append(17 if other == mem_only[1] else 28)
            else:
                row.append(11 if sock.get(m) == sock.get(n) else 21)
        lines.append("%s/distance:%s" % (base, " ".join(map(str, row))))
        kb = (mem_kb or {}).get(n, 16 * 1024 * 1024)
        lines.append("%s/meminfo:Node %d MemTotal:       %d kB" % (base, n, kb))
        lines.append("%s/meminfo:Node %d MemFree:        %d kB" % (base, n, kb // 2))
    lines.append("devices/system/node/possible:%s" % fmt(nodes))
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    here = os.path.dirname(os.path.abspath(__file__))
    dumps = {
        # 1 socket, 4 cores x 2 threads, no die_id (old kernel), cpu7 offline
        "sysfs-1socket.txt": dump([(0, 0, 0, 4)], 2, offline={7}, with_die=False),
        # 2 sockets x 1 NUMA node, 8 cores x 2 threads, cpu31 offline, isolcpus 2-3
        "sysfs-2socket.txt": dump([(0, 0, 0, 8), (1, 0, 1, 8)], 2, offline={31},
                                  isolated={2, 3}),
        # 4 sockets x 2 dies x 1 NUMA node, 4 cores x 2 threads, cpu63 offline,
        # plus a 64 GiB CPU-less (PMEM) node 8 closest to node 0
        "sysfs-4socket.txt": dump([(s, d, 2 * s + d, 4) for s in range(4) for d in range(2)],
                                  2, offline={63}, mem_only=(8, 0),
                                  mem_kb={8: 64 * 1024 * 1024}),
    }
    for name, text in dumps.items():
        with open(os.path.join(here, name), "w") as f:
            f.write(text)
