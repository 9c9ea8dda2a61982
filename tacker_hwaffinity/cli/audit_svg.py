"""The audit as a grid a person reads at a glance: physical hosts as columns, workloads
(worst first) as rows, the replicas on each host in the cell, coloured by the share of
the workload one host failing would take, with a legend saying so.

Past its ``Limits`` it draws the worst workloads and the hosts where one of them loses
most, and counts the rest: the caption says how many workloads are left out and how bad
they are, and a last column holds each drawn workload's replicas on the other hosts,
coloured as the worst of those hosts. However large the audit, the drawing stays under
32,767 px each way and, with names Kubernetes accepts, 2 MB (doc/output.md, "SVG at
scale")."""
from typing import NamedTuple

from tacker_hwaffinity.cli import svg_layout as layout

_CELL_W, _CELL_H, _PAD = 44, 20, layout.PAD
_HOST_SIZE, _LABEL_SIZE = 11, 12
_TIP_NAME, _TIP_HOST = 150, 100     # characters of a workload's, a host's name in a tooltip
RED, ORANGE, GREEN = "#e15759", "#f28e2b", "#59a14f"
LEGEND = ((RED, "one host holds over half of the workload"), (ORANGE, "over a third"),
          (GREEN, "a third or less"), (None, "number: the replicas on that host"))
OTHER_HOSTS = (None, "other hosts: the replicas on the hosts not drawn, coloured as the "
                     "worst of them")


class Limits(NamedTuple):
    """How much one drawing shows: workloads (rows) and hosts (columns, besides the
    column of the other hosts)."""

    rows: int = 60
    hosts: int = 40


LIMITS = Limits()


def _colour(ratio):
    if ratio > 0.5:
        return RED
    if ratio > 1.0 / 3:
        return ORANGE
    return GREEN


def render_svg(report, limits=LIMITS):
    """The SVG document of the audit REPORT, within LIMITS."""
    every = [w for w in report.workloads if max(w.desired, w.running) >= 2]
    rows = every[:limits.rows]
    cols = _hosts(rows, limits.hosts)
    col = {h: j for j, h in enumerate(cols)}
    others = {h for w in rows for h in w.hosts if h not in col}
    labels = ["%s %s/%s" % (w.kind, w.namespace, w.name) for w in rows]
    label_w = max([layout.text_width(t, _LABEL_SIZE) for t in labels] + [100]) + 2 * _PAD
    heads = cols + (["other %s" % layout.counted(len(others), "host")] if others else [])
    # host names run up and right at 60 degrees from the foot of their column
    host_w = max([layout.text_width(h, _HOST_SIZE) for h in heads] + [0])
    rise, reach = int(host_w * 0.87) + _HOST_SIZE, int(host_w * 0.5) + _HOST_SIZE
    grid_w = label_w + max(1, len(heads)) * _CELL_W
    legend = LEGEND + ((OTHER_HOSTS,) if others else ())
    head, head_w, head_h = layout.heading(
        "Replicas per %s: what one host failing takes" % report.key,
        "%s workload(s) with 2+ replicas (worst first), %s host(s)"
        % (layout.count(len(every)), layout.count(len({h for w in every for h in w.hosts}))),
        _left_out(every, rows, cols, others))
    width = max(_PAD + grid_w + reach, head_w, layout.legend_min_width(legend)) + _PAD
    parts, legend_h = layout.legend(legend, head_h, width)
    top = head_h + legend_h + _PAD + rise         # the grid's first row
    parts = head + parts
    for j, h in enumerate(heads):
        x = _PAD + label_w + j * _CELL_W + _CELL_W // 2
        parts.append('<text x="%d" y="%d" font-size="%d" transform="rotate(-60 %d %d)">%s'
                     '</text>' % (x, top - 6, _HOST_SIZE, x, top - 6, layout.shown(h)))
    for i, (w, label) in enumerate(zip(rows, labels)):
        parts.append('<text x="%d" y="%d" font-size="%d">%s</text>'
                     % (_PAD, top + i * _CELL_H + 14, _LABEL_SIZE, layout.shown(label)))
        _row(parts, _PAD + label_w, top + i * _CELL_H, w, label, col)
    height = top + max(1, len(rows)) * _CELL_H + 2 * _PAD
    return layout.document(width, height, parts)


def _row(parts, x0, y, w, label, col):
    """Draw the cells of workload W (named LABEL) from X0 at Y onto PARTS: one a host of
    COL (host -> column), then one of the hosts not drawn, past them."""
    den = w.desired or w.running
    rest = {h: n for h, n in w.hosts.items() if h not in col}
    label = layout.cut(label, _TIP_NAME)          # a tooltip holds its figures whole
    for h, n in w.hosts.items():
        if h in col:
            _cell(parts, x0 + col[h] * _CELL_W, y, n, _colour(n / den if den else 0),
                  "%s on %s: %d of %d" % (label, layout.cut(h, _TIP_HOST), n, den))
    if rest:
        worst = min(rest, key=lambda h: (-rest[h], h))
        _cell(parts, x0 + len(col) * _CELL_W, y, sum(rest.values()),
              _colour(rest[worst] / den if den else 0),
              "%s on %s: %d of %d, at most %d on one (%s)" % (
                  label, layout.counted(len(rest), "other host"), sum(rest.values()),
                  den, rest[worst], layout.cut(worst, _TIP_HOST)))


def _hosts(rows, most):
    """The hosts drawn as columns, most replicas of ROWS first: every one holding them,
    or past MOST hosts the MOST where one of ROWS loses the largest share."""
    used, share = {}, {}
    for w in rows:
        den = w.desired or w.running
        for h, n in w.hosts.items():
            used[h] = used.get(h, 0) + n
            share[h] = max(share.get(h, 0.0), n / den if den else 0.0)
    chosen = used if len(used) <= most else sorted(
        used, key=lambda h: (-share[h], -used[h], h))[:most]
    return sorted(chosen, key=lambda h: (-used[h], h))


def _cell(parts, x, y, n, colour, tip):
    parts.append('<rect x="%d" y="%d" width="%d" height="%d" fill="%s" stroke="#fff">'
                 '<title>%s</title></rect>' % (x, y, _CELL_W, _CELL_H, colour, layout.shown(tip)))
    parts.append('<text x="%d" y="%d" font-size="11" fill="#fff" '
                 'text-anchor="middle">%d</text>' % (x + _CELL_W // 2, y + 14, n))


def _left_out(every, rows, cols, others):
    """The caption's lines saying which workloads (of EVERY, ROWS drawn) and hosts (COLS
    drawn, OTHERS not) the grid leaves out."""
    lines = []
    if len(rows) < len(every):
        bands = [0, 0, 0]
        for w in every[len(rows):]:
            bands[(RED, ORANGE, GREEN).index(_colour(w.loss_ratio))] += 1
        lines.append("showing the %s worst of %s workloads; of the other %s, one host "
                     "takes over half of %s, over a third of %s, a third or less of %s"
                     % (layout.count(len(rows)), layout.count(len(every)),
                        layout.count(len(every) - len(rows)),
                        *(layout.count(b) for b in bands)))
    if others:
        on_others = sum(n for w in rows for h, n in w.hosts.items() if h in others)
        lines.append("showing %s of the %s hosts holding their replicas: those where one "
                     "loses most; the other %s hold %s of their %s replicas (last column)"
                     % (layout.count(len(cols)), layout.count(len(cols) + len(others)),
                        layout.count(len(others)), layout.count(on_others),
                        layout.count(sum(n for w in rows for n in w.hosts.values()))))
    return lines
