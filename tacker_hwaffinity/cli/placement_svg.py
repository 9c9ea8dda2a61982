"""A placement map a person reads at a glance: domains (compute hosts) as boxes,
worker nodes inside, planned pods inside those coloured per workload, unschedulable pods
apart, and a legend naming each colour.

Past its ``Limits`` it draws what an operator looks for and counts the rest, its caption
saying what was left out: the domains, and in each the nodes, receiving the most planned
pods; each node's first pods; a colour for each workload placing the most pods, grey for
the others; the unschedulable pods grouped by reason, with counts. However large the plan,
the drawing stays under 32,767 px each way (what browsers draw) and, with names Kubernetes
accepts, 2 MB (doc/output.md, "SVG at scale")."""
from typing import NamedTuple

from tacker_hwaffinity.cli import svg_layout as layout
from tacker_hwaffinity.scheduling.planner import pod_run

_W_NODE, _H_POD, _PAD = 220, 18, layout.PAD
_W_NODE_MOST = 560      # px: a node's name past that (a hostname's 63 characters) is cut
_UNPLACED, _OTHER = "#bb0000", "#8c8c8c"
_PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1",
            "#ff9da7", "#9c755f", "#bab0ac")
_REASON_W = 1600        # px: a longer reason is cut (its tooltip has it whole)
_INDENT = 16            # px: the pods of a reason, under it


class Limits(NamedTuple):
    """How much one drawing shows: domain boxes, nodes in a box, pods in a node, workload
    colours (at most the palette's), unschedulable pods listed one a line (more: grouped
    by reason), reasons, and DaemonSets that run on no node named in the caption."""

    domains: int = 30
    nodes: int = 8
    pods: int = 12
    colours: int = len(_PALETTE)
    unplaced: int = 20
    reasons: int = 10
    nowhere: int = 3


LIMITS = Limits()


def render_svg(plan, state, limits=LIMITS):
    """The SVG document of PLAN made on STATE (its nodes and the pods bound, the planned
    ones included), within LIMITS."""
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
    boxes = _boxes(order, groups, on_node, limits)
    colours, items, colour_line = _colours(plan, limits.colours)
    unplaced = [p for p in plan.placements if p.node is None]
    listed, unplaced_lines = _unplaced(unplaced, limits)
    placed = len(plan.placements) - len(unplaced)
    head, head_w, head_h = layout.heading(
        "Planned placement per %s" % key,
        "%s of %s pods placed across %s %s value(s)" % (
            layout.count(placed), layout.count(len(plan.placements)),
            layout.count(len(plan.domains())), key),
        _left_out(order, groups, boxes, on_node, limits) + colour_line + unplaced_lines
        + _nowhere(plan, limits))
    items.append((None, "(+N existing pods): bound before the plan"))
    if unplaced:
        items.append((_UNPLACED, "unschedulable"))
    node_w = min(_W_NODE_MOST, max([_W_NODE] + [
        layout.text_width(_node_label(n, existing), 13) + 16 for _v, nodes, _h in boxes
        for n in nodes]))
    width = max(_width(key, boxes, node_w), head_w, layout.legend_min_width(items),
                max((indent + layout.text_width(text, 12) for text, _t, indent in listed),
                    default=0) + 3 * _PAD)
    parts, legend_h = layout.legend(items, head_h, width)
    parts = head + parts
    y = head_h + legend_h + _PAD
    for value, nodes, hidden in boxes:
        y += _box(parts, y, width, node_w, (key, value, nodes, hidden),
                  on_node, existing, colours, limits.pods) + _PAD
    if unplaced:
        y += _unschedulable(parts, y, len(unplaced), listed)
    return layout.document(width, y + _PAD, parts)


def _width(key, boxes, node_w):
    """The width the domain BOXES take, their nodes NODE_W px wide."""
    columns = max([1] + [len(nodes) + bool(hidden) for _v, nodes, hidden in boxes])
    labels = [layout.text_width("%s: %s" % (key, v), 15, True) + 4 * _PAD
              for v, _n, _h in boxes if v]
    return max([3 * _PAD + columns * (node_w + _PAD)] + labels)


def _unschedulable(parts, y, count, listed):
    """Draw the COUNT unschedulable pods' LISTED lines at Y onto PARTS; their height."""
    parts.append('<text x="%d" y="%d" font-weight="bold" font-size="15" fill="%s">'
                 'Unschedulable (%s)</text>' % (_PAD, y + 20, _UNPLACED, layout.count(count)))
    for k, (text, tip, indent) in enumerate(listed):
        parts.append('<text x="%d" y="%d" font-size="12" fill="%s">%s%s</text>'
                     % (_PAD + 10 + indent, y + 40 + k * 16, _UNPLACED, layout.shown(text),
                        "<title>%s</title>" % layout.shown(tip) if tip else ""))
    return 40 + len(listed) * 16


def _planned(nodes, on_node):
    return sum(len(on_node.get(n.name, ())) for n in nodes)


def _boxes(order, groups, on_node, limits):
    """[(value, nodes drawn, nodes left out)] of the domain boxes drawn: the domains (in
    ORDER) and nodes receiving the most planned pods, within LIMITS."""
    out = []
    for value in layout.most(order, limits.domains, lambda v: _planned(groups[v], on_node)):
        nodes = layout.most(groups[value], limits.nodes,
                            lambda n: len(on_node.get(n.name, ())))
        drawn = {id(n) for n in nodes}
        out.append((value, nodes, [n for n in groups[value] if id(n) not in drawn]))
    return out


def _box(parts, y, width, node_w, box, on_node, existing, colours, most_pods):
    """Draw BOX (key, value, nodes drawn, nodes left out) at Y onto PARTS; its height."""
    key, value, nodes, hidden = box
    tallest = max(min(len(pods), most_pods + 1) for pods in
                  [on_node.get(n.name, ()) for n in nodes])
    node_h = 44 + max(tallest, 1) * _H_POD
    box_h = node_h + 40
    label = "%s: %s" % (key, value if value is not None else "(nodes without %s)" % key)
    parts.append('<rect x="%d" y="%d" width="%d" height="%d" rx="8" fill="#f4f4f4" '
                 'stroke="#555" stroke-width="2"/>' % (_PAD, y, width - 2 * _PAD, box_h))
    parts.append('<text x="%d" y="%d" font-weight="bold" font-size="15">%s</text>'
                 % (_PAD + 10, y + 22, layout.shown(label)))
    for j, node in enumerate(nodes):
        x = 2 * _PAD + j * (node_w + _PAD)
        parts.append('<rect x="%d" y="%d" width="%d" height="%d" rx="5" fill="#fff" '
                     'stroke="#888"/>' % (x, y + 32, node_w, node_h))
        label = _node_label(node, existing)
        fitted = layout.fitting(label, node_w - 16, 13)
        parts.append('<text x="%d" y="%d" font-size="13">%s%s</text>'
                     % (x + 8, y + 50, layout.shown(fitted), "<title>%s</title>" % layout.shown(
                         label) if fitted != label else ""))
        pods = on_node.get(node.name, [])
        for k, pod in enumerate(pods[:most_pods]):
            py = y + 58 + k * _H_POD
            parts.append('<rect x="%d" y="%d" width="%d" height="%d" rx="3" fill="%s">'
                         '<title>%s</title></rect>'
                         % (x + 6, py, node_w - 12, _H_POD - 3, colours[id(pod.spec)],
                            layout.shown(pod.key)))
            parts.append('<text x="%d" y="%d" font-size="11" fill="#fff">%s</text>' % (
                x + 10, py + 11, layout.shown(layout.fitting(pod.name, node_w - 20, 11))))
        if len(pods) > most_pods:
            parts.append('<text x="%d" y="%d" font-size="11" class="more">+%s</text>'
                         % (x + 10, y + 69 + most_pods * _H_POD,
                            layout.counted(len(pods) - most_pods, "more pod")))
    if hidden:
        x = 2 * _PAD + len(nodes) * (node_w + _PAD)
        parts.append('<rect x="%d" y="%d" width="%d" height="%d" rx="5" fill="#fff" '
                     'stroke="#888" stroke-dasharray="4 3"/>' % (x, y + 32, node_w, node_h))
        parts.append('<text x="%d" y="%d" font-size="13" class="more">+%s</text>'
                     % (x + 8, y + 50, layout.counted(len(hidden), "more node")))
        parts.append('<text x="%d" y="%d" font-size="12" class="more">%s planned</text>'
                     % (x + 8, y + 68, layout.counted(_planned(hidden, on_node), "pod")))
    return box_h


def _left_out(order, groups, boxes, on_node, limits):
    """The caption's lines saying which domains, nodes and pods BOXES leave out."""
    lines = []
    if len(boxes) < len(order):
        drawn = {v for v, _n, _h in boxes}
        rest = [n for v in order if v not in drawn for n in groups[v]]
        lines.append("showing %s of %s boxes: the %s receiving the most planned pods; "
                     "the other %s hold %s and %s planned"
                     % (layout.count(len(boxes)), layout.count(len(order)),
                        layout.count(len(boxes)), layout.count(len(order) - len(boxes)),
                        layout.counted(len(rest), "node"),
                        layout.counted(_planned(rest, on_node), "pod")))
    hidden = [n for _v, _n, h in boxes for n in h]
    if hidden:
        lines.append("in those boxes, showing %s of %s nodes: per box the %d receiving the "
                     "most planned pods; the other %s (+N more nodes) receive %s planned"
                     % (layout.count(sum(len(n) for _v, n, _h in boxes)),
                        layout.count(sum(len(n) + len(h) for _v, n, h in boxes)),
                        limits.nodes, layout.count(len(hidden)),
                        layout.counted(_planned(hidden, on_node), "pod")))
    on_drawn = [len(on_node.get(n.name, ())) for _v, nodes, _h in boxes for n in nodes]
    cut = sum(max(0, k - limits.pods) for k in on_drawn)
    if cut:
        lines.append("on those nodes, showing %s of %s planned pods: per node the first %d; "
                     "the other %s are counted (+N more pods)"
                     % (layout.count(sum(on_drawn) - cut), layout.count(sum(on_drawn)),
                        limits.pods, layout.count(cut)))
    return lines


def _colours(plan, most):
    """({id(pod spec): colour}, legend items, caption lines): a colour for each workload
    placing pods, in the order they come, or at more than MOST (at most the palette's)
    workloads, for the MOST - 1 placing the most and grey for the others."""
    most = min(most, len(_PALETTE))
    first = {}      # id(spec) -> [its first pod, pods placed]; replicas share their spec
    for p in plan.placements:
        if p.node:
            first.setdefault(id(p.pod.spec), [p.pod, 0])[1] += 1
    coloured = set(first) if len(first) <= most else set(
        layout.most(list(first), most - 1, lambda spec: first[spec][1]))
    colours, items = {}, []
    for spec, (pod, _n) in first.items():
        if spec in coloured:
            colours[spec] = _PALETTE[len(items)]
            items.append((colours[spec], _workload(pod)))
        else:
            colours[spec] = _OTHER
    if len(coloured) == len(first):
        return colours, items, []
    others = [n for spec, (_p, n) in first.items() if spec not in coloured]
    items.append((_OTHER, "the other workloads"))
    return colours, items, [
        "colours: %d of the %s workloads with pods placed, those with the most; grey: the "
        "other %s (%s placed)" % (len(coloured), layout.count(len(first)),
                                  layout.count(len(others)), layout.counted(sum(others), "pod"))]


def _nowhere(plan, limits):
    """Caption lines naming the DaemonSets of PLAN that run on no node (its ``unplaced``
    records with none desired), at most LIMITS' and how many more."""
    idle = [u for u in plan.unplaced if not u["desired"]]
    lines = [layout.fitting("%s: %s" % (u["workload"], u["reason"]), _REASON_W,
                            layout.SUBTITLE_SIZE) for u in idle[:limits.nowhere]]
    if len(idle) > limits.nowhere:
        lines.append("+%s that run on no node" % layout.counted(len(idle) - limits.nowhere,
                                                                "more DaemonSet"))
    return lines


def _unplaced(unplaced, limits):
    """([(line, tooltip or None, indent in px)] listing the pods UNPLACED, caption lines):
    one line a pod, or past LIMITS two a reason (most pods first), and what that leaves
    out."""
    if len(unplaced) <= limits.unplaced:
        return [(p.pod.key, None, 0) for p in unplaced], []
    by_reason = {}
    for p in unplaced:
        by_reason.setdefault("; ".join(p.reasons), []).append(p.pod.key)
    chosen = layout.most(list(by_reason), limits.reasons, lambda r: len(by_reason[r]))
    listed = []
    for reason in chosen:
        text = "%s: %s" % (layout.counted(len(by_reason[reason]), "pod"), reason)
        fitted = layout.fitting(text, _REASON_W, 12)
        listed.append((fitted, text if fitted != text else None, 0))
        listed.append((pod_run(by_reason[reason]), None, _INDENT))
    line = "unschedulable: %s grouped by their %s" % (
        layout.counted(len(unplaced), "pod"), layout.counted(len(by_reason), "reason"))
    if len(chosen) < len(by_reason):
        rest = sum(len(by_reason[r]) for r in by_reason if r not in chosen)
        listed.append(("+%s for %s" % (layout.counted(rest, "more pod"), layout.counted(
            len(by_reason) - len(chosen), "other reason")), None, 0))
        line += "; showing the %d with the most pods, the other %s hold %s" % (
            len(chosen), layout.count(len(by_reason) - len(chosen)), layout.counted(rest, "pod"))
    return listed, [line]


def _workload(pod):
    """What a pod's colour stands for: its controller, else the pod itself."""
    if pod.owner:
        return "%s %s/%s" % (pod.owner[1], pod.namespace, pod.owner[2])
    return "Pod %s" % pod.key


def _node_label(node, existing):
    extra = existing.get(node.name, 0)
    return node.name + (" (+%d existing pods)" % extra if extra else "")
