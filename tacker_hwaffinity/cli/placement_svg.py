"""A placement map a person reads at a glance: domains (compute hosts) as boxes,
worker nodes inside, planned pods inside those, unschedulable pods apart."""
from xml.sax.saxutils import escape

_W_NODE, _H_POD, _PAD = 220, 18, 10
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
    colours, parts, y = {}, [], 40
    width = 3 * _PAD + max(1, max((len(groups[v]) for v in order), default=1)) * (_W_NODE + _PAD)
    for value in order:
        nodes = groups[value]
        tallest = max(len(on_node.get(n.name, [])) for n in nodes)
        node_h = 44 + max(tallest, 1) * _H_POD
        box_h = node_h + 40
        label = value if value is not None else "(nodes without %s)" % key
        parts.append('<rect x="%d" y="%d" width="%d" height="%d" rx="8" fill="#f4f4f4" '
                     'stroke="#555" stroke-width="2"/>' % (_PAD, y, width - 2 * _PAD, box_h))
        parts.append('<text x="%d" y="%d" font-weight="bold" font-size="15">%s: %s</text>'
                     % (_PAD + 10, y + 22, escape(key), escape(label)))
        for j, node in enumerate(nodes):
            x = 2 * _PAD + j * (_W_NODE + _PAD)
            parts.append('<rect x="%d" y="%d" width="%d" height="%d" rx="5" fill="#fff" '
                         'stroke="#888"/>' % (x, y + 32, _W_NODE, node_h))
            extra = existing.get(node.name, 0)
            parts.append('<text x="%d" y="%d" font-size="13">%s%s</text>'
                         % (x + 8, y + 50, escape(node.name),
                            escape(" (+%d existing pods)" % extra) if extra else ""))
            for k, pod in enumerate(on_node.get(node.name, [])):
                # replicas of one workload share their parsed template: one colour each
                c = colours.setdefault(id(pod.spec), _PALETTE[len(colours) % len(_PALETTE)])
                py = y + 58 + k * _H_POD
                parts.append('<rect x="%d" y="%d" width="%d" height="%d" rx="3" fill="%s"/>'
                             % (x + 6, py, _W_NODE - 12, _H_POD - 3, c))
                parts.append('<text x="%d" y="%d" font-size="11" fill="#fff">%s</text>'
                             % (x + 10, py + 11, escape(pod.name[:34])))
        y += box_h + _PAD
    unplaced = [p.pod.key for p in plan.placements if p.node is None]
    if unplaced:
        parts.append('<text x="%d" y="%d" font-weight="bold" font-size="15" fill="#b00">'
                     'Unschedulable (%d)</text>' % (_PAD, y + 20, len(unplaced)))
        for k, pod in enumerate(unplaced):
            parts.append('<text x="%d" y="%d" font-size="12" fill="#b00">%s</text>'
                         % (_PAD + 10, y + 40 + k * 16, escape(pod)))
        y += 40 + len(unplaced) * 16
    placed = len(plan.placements) - len(unplaced)
    title = ("%d of %d pods placed across %d %s value(s)"
             % (placed, len(plan.placements), len(plan.domains()), key))
    head = ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
            'font-family="sans-serif">\n<rect width="100%%" height="100%%" fill="#fff"/>\n'
            '<text x="%d" y="26" font-size="18" font-weight="bold">%s</text>\n'
            % (width, y + _PAD, _PAD, escape(title)))
    return head + "\n".join(parts) + "\n</svg>\n"
