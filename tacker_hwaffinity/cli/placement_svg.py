"""A placement map a person reads at a glance: domains (compute hosts) as boxes,
worker nodes inside, planned pods inside those coloured per workload, unschedulable pods
apart, and a legend naming each colour."""
from xml.sax.saxutils import escape

from tacker_hwaffinity.cli import svg_layout as layout

_W_NODE, _H_POD, _PAD = 220, 18, layout.PAD
_UNPLACED = "#bb0000"
_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
            "#ff9da7", "#9c755f", "#bab0ac")


def render_svg(plan, state):
    key = plan.topology_key
    on_node = {}
    for p in plan.placements:
        if p.node:
            on_node.setdefault(p.node, []).append(p.pod)
    existing = {}  # pods bound before the plan (STATE also holds the planned ones)
    for _pod, i in state.pods:
        existing[state.nodes[i].name] = existing.get(state.nodes[i].name, 0) + 1
    for name, pods in on_node.items():
        existing[name] -= len(pods)
    groups = {}
    for node in state.nodes:
        groups.setdefault(node.labels.get(key), []).append(node)
    order = sorted((v for v in groups if v is not None)) + ([None] if None in groups else [])
    colours, workloads = {}, {}
    for p in plan.placements:
        if p.node:  # replicas of one workload share their parsed template: one colour each
            c = colours.setdefault(id(p.pod.spec), _PALETTE[len(colours) % len(_PALETTE)])
            workloads.setdefault(id(p.pod.spec), (c, _workload(p.pod)))
    unplaced = [p.pod.key for p in plan.placements if p.node is None]
    placed = len(plan.placements) - len(unplaced)
    head, head_w, head_h = layout.heading(
        "Planned placement per %s" % key,
        "%d of %d pods placed across %d %s value(s)"
        % (placed, len(plan.placements), len(plan.domains()), key))
    items = list(workloads.values()) + [(None, "(+N existing pods): bound before the plan")]
    if unplaced:
        items.append((_UNPLACED, "unschedulable"))
    node_w = max([_W_NODE] + [layout.text_width(_node_label(n, existing), 13) + 16
                              for n in state.nodes])
    width = max(3 * _PAD + max(1, max((len(groups[v]) for v in order), default=1))
                * (node_w + _PAD), head_w, layout.legend_min_width(items),
                max((layout.text_width(u, 12) for u in unplaced), default=0) + 3 * _PAD,
                max(layout.text_width("%s: %s" % (key, v), 15, True) for v in order if v)
                + 4 * _PAD if any(order) else 0)
    parts, legend_h = layout.legend(items, head_h, width)
    parts = head + parts
    y = head_h + legend_h + _PAD
    for value in order:
        nodes = groups[value]
        tallest = max(len(on_node.get(n.name, [])) for n in nodes)
        node_h = 44 + max(tallest, 1) * _H_POD
        box_h = node_h + 40
        label = "%s: %s" % (key, value if value is not None else "(nodes without %s)" % key)
        parts.append('<rect x="%d" y="%d" width="%d" height="%d" rx="8" fill="#f4f4f4" '
                     'stroke="#555" stroke-width="2"/>' % (_PAD, y, width - 2 * _PAD, box_h))
        parts.append('<text x="%d" y="%d" font-weight="bold" font-size="15">%s</text>'
                     % (_PAD + 10, y + 22, escape(label)))
        for j, node in enumerate(nodes):
            x = 2 * _PAD + j * (node_w + _PAD)
            parts.append('<rect x="%d" y="%d" width="%d" height="%d" rx="5" fill="#fff" '
                         'stroke="#888"/>' % (x, y + 32, node_w, node_h))
            parts.append('<text x="%d" y="%d" font-size="13">%s</text>'
                         % (x + 8, y + 50, escape(_node_label(node, existing))))
            for k, pod in enumerate(on_node.get(node.name, [])):
                py = y + 58 + k * _H_POD
                parts.append('<rect x="%d" y="%d" width="%d" height="%d" rx="3" fill="%s">'
                             '<title>%s</title></rect>'
                             % (x + 6, py, node_w - 12, _H_POD - 3, colours[id(pod.spec)],
                                escape(pod.key)))
                parts.append('<text x="%d" y="%d" font-size="11" fill="#fff">%s</text>'
                             % (x + 10, py + 11, escape(layout.fitting(pod.name, node_w - 20, 11))))
        y += box_h + _PAD
    if unplaced:
        parts.append('<text x="%d" y="%d" font-weight="bold" font-size="15" fill="%s">'
                     'Unschedulable (%d)</text>' % (_PAD, y + 20, _UNPLACED, len(unplaced)))
        for k, pod in enumerate(unplaced):
            parts.append('<text x="%d" y="%d" font-size="12" fill="%s">%s</text>'
                         % (_PAD + 10, y + 40 + k * 16, _UNPLACED, escape(pod)))
        y += 40 + len(unplaced) * 16
    return layout.document(width, y + _PAD, parts)


def _workload(pod):
    """What a pod's colour stands for: its controller, else the pod itself."""
    if pod.owner:
        return "%s %s/%s" % (pod.owner[1], pod.namespace, pod.owner[2])
    return "Pod %s" % pod.key


def _node_label(node, existing):
    extra = existing.get(node.name, 0)
    return node.name + (" (+%d existing pods)" % extra if extra else "")
