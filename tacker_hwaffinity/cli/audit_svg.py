"""The audit as a grid a person reads at a glance: physical hosts as columns, workloads
(worst first) as rows, the replicas on each host in the cell, coloured by the share of
the workload one host failing would take (placement_svg's conventions)."""
from xml.sax.saxutils import escape

MAX_ROWS, MAX_COLS = 300, 200
_CELL_W, _CELL_H, _LABEL_W, _HEAD_H, _PAD = 44, 20, 320, 120, 10


def _colour(ratio):
    if ratio > 0.5:
        return "#e15759"    # over half: red
    if ratio > 1.0 / 3:
        return "#f28e2b"    # over a third: orange
    return "#59a14f"


def render_svg(report):
    rows = [w for w in report.workloads if max(w.desired, w.running) >= 2][:MAX_ROWS]
    used = {}
    for w in rows:
        for h, n in w.hosts.items():
            used[h] = used.get(h, 0) + n
    cols = sorted(used, key=lambda h: (-used[h], h))[:MAX_COLS]
    col = {h: j for j, h in enumerate(cols)}
    width = 2 * _PAD + _LABEL_W + max(1, len(cols)) * _CELL_W
    height = _HEAD_H + max(1, len(rows)) * _CELL_H + 3 * _PAD
    parts = []
    for h, j in col.items():
        x = _PAD + _LABEL_W + j * _CELL_W + _CELL_W // 2
        parts.append('<text x="%d" y="%d" font-size="11" transform="rotate(-60 %d %d)">%s'
                     '</text>' % (x, _HEAD_H - 6, x, _HEAD_H - 6, escape(h[:24])))
    for i, w in enumerate(rows):
        y = _HEAD_H + i * _CELL_H
        label = "%s %s/%s" % (w.kind, w.namespace, w.name)
        parts.append('<text x="%d" y="%d" font-size="12">%s</text>'
                     % (_PAD, y + 14, escape(label[:48])))
        den = w.desired or w.running
        for h, n in w.hosts.items():
            if h not in col:
                continue
            x = _PAD + _LABEL_W + col[h] * _CELL_W
            parts.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#fff">'
                         '<title>%s</title></rect>' % (
                             x, y, _CELL_W, _CELL_H, _colour(n / den if den else 0),
                             escape("%s on %s: %d of %d" % (label, h, n, den))))
            parts.append('<text x="%d" y="%d" font-size="11" fill="#fff" '
                         'text-anchor="middle">%d</text>' % (x + _CELL_W // 2, y + 14, n))
    title = "Replicas per %s: %d workload(s) with 2+ replicas, %d host(s)" % (
        report.key, len(rows), len(cols))
    head = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
            'font-family="sans-serif">\n<rect width="100%%" height="100%%" fill="#fff"/>\n'
            '<text x="%d" y="24" font-size="18" font-weight="bold">%s</text>\n'
            % (width, height, _PAD, escape(title)))
    return head + "\n".join(parts) + "\n</svg>\n"
