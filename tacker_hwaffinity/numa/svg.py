"""SVG picture of a placement: sockets, NUMA nodes, CPUs coloured by container.

One box per socket, one per NUMA node inside it, one cell per CPU (a column
per core, its SMT threads stacked). A CPU granted exclusively is filled with
its container's colour; the shared CPUs of a pool are light grey with a
coloured bar per container sharing them; isolated CPUs have a dashed border,
reserved CPUs an "R", offline CPUs a cross. A legend lists every container
with its pool, CPUs and memory nodes.
"""
from xml.sax.saxutils import escape

from tacker_hwaffinity.numa.cpuset import format_list
from tacker_hwaffinity.numa.placement import Placer
from tacker_hwaffinity.numa.subjects import Container

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
           "#17becf", "#bcbd22", "#7f7f7f", "#393b79", "#637939", "#8c6d31", "#843c39",
           "#7b4173", "#3182bd", "#e6550d", "#31a354", "#756bb1", "#636363")
CELL, GAP, PAD = 22, 3, 10


def _color(i):
    if i < len(PALETTE):
        return PALETTE[i]
    h = (i * 137.508) % 360
    return "hsl(%d,60%%,45%%)" % h


def _text(x, y, s, size=12, weight="normal", anchor="start", fill="#222"):
    return ('<text x="%d" y="%d" font-family="sans-serif" font-size="%d" font-weight="%s" '
            'text-anchor="%s" fill="%s">%s</text>' % (x, y, size, weight, anchor, fill, escape(s)))


def render(placer: Placer) -> str:
    m = placer.machine
    decisions = [d for d in placer.decisions if d.grant]
    colors = {d.container: _color(i) for i, d in enumerate(decisions)}
    owner = {}
    for d in decisions:
        for c in d.grant.exclusive:
            owner[c] = d.container
    sharers: dict[int, list[Container]] = {}
    for d in decisions:
        if not d.grant.exclusive or d.grant.portion:
            for c in placer.cpuset(d.grant) - d.grant.exclusive:
                sharers.setdefault(c, []).append(d.container)
    parts, y = [], PAD + 20
    parts.append(_text(PAD, PAD + 12, "%s: %d sockets, %d NUMA nodes, %d CPUs"
                       % (m.name, len(m.sockets()), len(m.cpu_nodes()), len(m.cpus)),
                       14, "bold"))
    width = 0
    for s in m.sockets():
        x = PAD
        nodes = [n for n in m.cpu_nodes() if n.socket == s]
        boxes, height = [], 0
        for n in nodes:
            cores: dict[object, list[int]] = {}
            for c in sorted(n.cpus | {c.id for c in m.cpus.values()
                                      if not c.online and c.node == n.id}):
                cores.setdefault(m.cpus[c].core if m.cpus[c].online else ("off", c), []).append(c)
            cols = list(cores.values())
            per_row = min(len(cols), 16) or 1
            rows = (len(cols) + per_row - 1) // per_row
            threads = max(len(t) for t in cols) if cols else 1
            w = per_row * (CELL + GAP) + 2 * PAD
            h = 22 + rows * (threads * (CELL + GAP) + GAP * 2) + PAD
            boxes.append((n, cols, per_row, threads, w, h))
            height = max(height, h)
        sw = sum(b[4] for b in boxes) + PAD * (len(boxes) + 1)
        parts.append('<rect x="%d" y="%d" width="%d" height="%d" rx="8" fill="#f4f4f8" '
                     'stroke="#555" stroke-width="1.5"/>' % (x, y, sw, height + 2 * PAD + 20))
        parts.append(_text(x + PAD, y + 16, "socket %d" % s, 13, "bold"))
        nx, ny = x + PAD, y + 24
        for n, cols, per_row, threads, w, h in boxes:
            parts.append('<rect x="%d" y="%d" width="%d" height="%d" rx="5" fill="#fff" '
                         'stroke="#888"/>' % (nx, ny, w, h))
            parts.append(_text(nx + PAD, ny + 15, "NUMA node %d  (%s)" % (
                n.id, _gib(n.memory)), 11, "bold"))
            for i, col in enumerate(cols):
                cx = nx + PAD + (i % per_row) * (CELL + GAP)
                cy0 = ny + 22 + (i // per_row) * (threads * (CELL + GAP) + GAP * 2)
                for t, cpu in enumerate(col):
                    parts.extend(_cpu(m, placer, cpu, cx, cy0 + t * (CELL + GAP), owner,
                                      sharers, colors))
            nx += w + PAD
        width = max(width, x + sw + PAD)
        y += height + 2 * PAD + 20 + PAD
    y += 6
    legend = ("containers (solid: exclusive CPUs; bar: shares the pool's shared CPUs; "
              "dashed border: isolated; R: reserved; x: offline)")
    parts.append(_text(PAD, y + 10, legend, 11))
    width = max(width, PAD * 2 + 6 * len(legend))
    y += 18
    for d in placer.decisions:
        c = d.container
        if d.grant:
            g = d.grant
            parts.append('<rect x="%d" y="%d" width="14" height="14" fill="%s"/>'
                         % (PAD, y, colors[c]))
            line = "%s  ->  %s   cpus %s   mems %s%s" % (
                c.ref, g.pool.name, format_list(placer.cpuset(g)), format_list(placer.memset(g)),
                "   (exclusive %s)" % format_list(g.exclusive) if g.exclusive else "   (shared)")
        else:
            line = "%s  NOT PLACED: %s" % (c.ref, d.error)
        parts.append(_text(PAD + 20, y + 12, line, 12))
        width = max(width, PAD + 20 + 7 * len(line))
        y += 18
    height = y + PAD
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
            'viewBox="0 0 %d %d">\n<rect width="100%%" height="100%%" fill="#fff"/>\n%s\n</svg>\n'
            % (width, height, width, height, "\n".join(parts)))


def _gib(b):
    return "%.0f GiB" % (b / 2 ** 30) if b else "memory unknown"


def _cpu(m, placer, cpu, x, y, owner, sharers, colors):
    out = []
    online = m.cpus[cpu].online
    fill, fg = "#e8e8e8", "#333"
    if not online:
        fill = "#bbb"
    elif cpu in owner:
        fill, fg = colors[owner[cpu]], "#fff"
    dash = ' stroke-dasharray="3,2"' if cpu in m.isolated else ""
    out.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#444"%s>'
               '<title>CPU %d</title></rect>' % (x, y, CELL, CELL, fill, dash, cpu))
    label = "R" if cpu in m.reserved else str(cpu)
    out.append(_text(x + CELL // 2, y + 15, label, 9 if len(label) > 2 else 10,
                     anchor="middle", fill=fg))
    if not online:
        out.append('<path d="M%d %d L%d %d M%d %d L%d %d" stroke="#666"/>'
                   % (x, y, x + CELL, y + CELL, x + CELL, y, x, y + CELL))
    users = sharers.get(cpu, [])
    if users and cpu not in owner:
        bw = CELL / len(users)
        for i, c in enumerate(users):
            out.append('<rect x="%.1f" y="%d" width="%.1f" height="4" fill="%s"/>'
                       % (x + i * bw, y + CELL - 4, bw, colors[c]))
    return out
