"""The audit as a grid a person reads at a glance: physical hosts as columns, workloads
(worst first) as rows, the replicas on each host in the cell, coloured by the share of
the workload one host failing would take, with a legend saying so."""
from xml.sax.saxutils import escape

from tacker_hwaffinity.cli import svg_layout as layout

MAX_ROWS, MAX_COLS = 300, 200
_CELL_W, _CELL_H, _PAD = 44, 20, layout.PAD
_HOST_SIZE, _LABEL_SIZE = 11, 12
RED, ORANGE, GREEN = "#e15759", "#f28e2b", "#59a14f"
LEGEND = ((RED, "one host holds over half of the workload"), (ORANGE, "over a third"),
          (GREEN, "a third or less"), (None, "number: the replicas on that host"))


def _colour(ratio):
    if ratio > 0.5:
        return RED
    if ratio > 1.0 / 3:
        return ORANGE
    return GREEN


def render_svg(report):
    rows = [w for w in report.workloads if max(w.desired, w.running) >= 2][:MAX_ROWS]
    used = {}
    for w in rows:
        for h, n in w.hosts.items():
            used[h] = used.get(h, 0) + n
    cols = sorted(used, key=lambda h: (-used[h], h))[:MAX_COLS]
    col = {h: j for j, h in enumerate(cols)}
    labels = ["%s %s/%s" % (w.kind, w.namespace, w.name) for w in rows]
    label_w = max([layout.text_width(t, _LABEL_SIZE) for t in labels] + [100]) + 2 * _PAD
    # host names run up and right at 60 degrees from the foot of their column
    host_w = max([layout.text_width(h, _HOST_SIZE) for h in cols] + [0])
    rise, reach = int(host_w * 0.87) + _HOST_SIZE, int(host_w * 0.5) + _HOST_SIZE
    grid_w = label_w + max(1, len(cols)) * _CELL_W
    head, head_w, head_h = layout.heading(
        "Replicas per %s: what one host failing takes" % report.key,
        "%d workload(s) with 2+ replicas (worst first), %d host(s)" % (len(rows), len(cols)))
    width = max(_PAD + grid_w + reach, head_w, layout.legend_min_width(LEGEND)) + _PAD
    parts, legend_h = layout.legend(LEGEND, head_h, width)
    top = head_h + legend_h + _PAD + rise         # the grid's first row
    parts = head + parts
    for h, j in col.items():
        x = _PAD + label_w + j * _CELL_W + _CELL_W // 2
        parts.append('<text x="%d" y="%d" font-size="%d" transform="rotate(-60 %d %d)">%s'
                     '</text>' % (x, top - 6, _HOST_SIZE, x, top - 6, escape(h)))
    for i, (w, label) in enumerate(zip(rows, labels)):
        y = top + i * _CELL_H
        parts.append('<text x="%d" y="%d" font-size="%d">%s</text>'
                     % (_PAD, y + 14, _LABEL_SIZE, escape(label)))
        den = w.desired or w.running
        for h, n in w.hosts.items():
            if h not in col:
                continue
            x = _PAD + label_w + col[h] * _CELL_W
            parts.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#fff">'
                         '<title>%s</title></rect>' % (
                             x, y, _CELL_W, _CELL_H, _colour(n / den if den else 0),
                             escape("%s on %s: %d of %d" % (label, h, n, den))))
            parts.append('<text x="%d" y="%d" font-size="11" fill="#fff" '
                         'text-anchor="middle">%d</text>' % (x + _CELL_W // 2, y + 14, n))
    height = top + max(1, len(rows)) * _CELL_H + 2 * _PAD
    return layout.document(width, height, parts)
