"""The plan and audit SVGs at scale: 2,000 nodes, 3,000 workloads, 500 unschedulable pods.
Each parses, stays under what browsers draw (32,767 px each way) and under BYTES, and its
caption states the totals and what it leaves out; what a caption says adds up to the
input (a property over generated plans and audits, drawn at small limits); the plan spends
less in its SVG than in planning; names at the longest keep the bounds; and Chromium draws
both (marker browser: their top and their foot, at full size). Planning 6,490 pods on
2,000 nodes takes 15-40 s: those tests are marked slow."""
import contextlib
import io
import json
import re
import xml.etree.ElementTree as ET

import pytest
from hypothesis import given, settings, strategies as st

from builders import node, pod
from tacker_hwaffinity.audit import core
from tacker_hwaffinity.cli import audit_svg, placement_svg, svg_layout
from tacker_hwaffinity.cli.common import TIMING_ENV
from tacker_hwaffinity.cli.main import main
from tacker_hwaffinity.scheduling import planner
from tacker_hwaffinity.scheduling.profile import Profile
from tacker_hwaffinity.scheduling.snapshot import cluster_from_objects, workloads_from_objects

from tests.audit.helpers import owner
from tests.scheduling.test_diagnosis import deployment

from . import svg_check

KEY = "CIS-node"
NODES, PER_HOST, WORKLOADS, UNPLACED = 2000, 4, 3000, 500
MOST_PX = 32767                 # the most px browsers (and most renderers) draw each way
BYTES = 2_000_000               # the bound doc/output.md states for either drawing
ALLOC = {"cpu": "64", "memory": "256Gi", "pods": "110"}
NO_NODE = {"accelerator": "gpu"}    # a nodeSelector no node matches


def _nodes():
    return [node("worker-%04d" % i, labels={KEY: "compute-%03d" % (i // PER_HOST)}, alloc=ALLOC)
            for i in range(NODES)]


def _plan_files(tmp):
    """A 2,000-node cluster (a pod already on every tenth node) and 3,000 Deployments:
    2,995 of 2 replicas, and 5 of 100 that no node takes, for two reasons."""
    cluster = _nodes() + [pod("sys-%04d" % i, on="worker-%04d" % i, phase="Running", cpu="1")
                          for i in range(0, NODES, 10)]
    workloads = [deployment("svc-%04d" % k, replicas=2, cpu="100m")
                 for k in range(WORKLOADS - 5)]
    workloads += [deployment("gpu-%d" % k, replicas=100, nodeSelector=NO_NODE) for k in range(3)]
    workloads += [deployment("huge-%d" % k, replicas=100, cpu="100") for k in range(2)]
    return _write(tmp / "cluster.json", cluster), _write(tmp / "workloads.json", workloads)


def _audit_file(tmp):
    """The 2,000 nodes on 500 hosts running 3,000 StatefulSets of 2 to 5 replicas: every
    25th all on one host, every 7th two on one host, the others spread."""
    items = _nodes()
    for s in range(WORKLOADS):
        name, replicas = "db-%04d" % s, 2 + s % 4
        items.append(owner("StatefulSet", name, replicas=replicas))
        for r in range(replicas):
            host = (s // 25 if s % 25 == 0 else s * 7 % 500 if s % 7 == 0 and r < 2
                    else (s * 7 + r) % 500)
            items.append(pod("%s-%d" % (name, r), on="worker-%04d" % (host * PER_HOST + r % 4),
                             owner=("StatefulSet", name), phase="Running", labels={"app": name}))
    return _write(tmp / "audit.json", items)


def _write(path, items):
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return str(path)


def _run(argv):
    """(exit status, stdout, stderr) of the command ARGV."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = main(argv)
    return status, out.getvalue(), err.getvalue()


def _large_plan(tmp):
    """(exit status, SVG, stderr) of the plan at scale, timed (HWAFFINITY_TIMING)."""
    cluster, workloads = _plan_files(tmp)
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv(TIMING_ENV, "1")
        return _run(["plan", "--cluster", cluster, workloads, "-o", "svg"])


def _large_audit(tmp):
    """(exit status, SVG, stderr) of the audit at scale."""
    return _run(["audit", "--cluster", _audit_file(tmp), "-o", "svg"])


def _within_bounds(svg):
    root = ET.fromstring(svg)
    width, height = int(root.get("width")), int(root.get("height"))
    assert 0 < width <= MOST_PX and 0 < height <= MOST_PX, (width, height)
    assert len(svg.encode()) <= BYTES, len(svg.encode())
    assert svg_check.outside(svg) == []
    assert '<g class="legend">' in svg


@pytest.mark.slow
def test_the_plan_at_scale_states_its_totals_within_the_bounds_and_draws_fast(tmp_path):
    status, svg, err = _large_plan(tmp_path)
    assert status == 1                          # some pods unplaced
    _within_bounds(svg)
    placed = 2 * (WORKLOADS - 5)
    assert svg_check.plan_figures(svg) == {
        "values": NODES // PER_HOST, "nodes": NODES, "pods": placed + UNPLACED,
        "placed": placed, "unplaced": UNPLACED, "workloads": WORKLOADS - 5}
    caption = svg_check.caption(ET.fromstring(svg))
    assert caption[0] == "5,990 of 6,490 pods placed across 500 CIS-node value(s)"
    assert caption[1].startswith("showing 30 of 500 boxes: the 30 receiving the most planned "
                                 "pods; the other 470 hold 1,880 nodes and ")
    assert caption[-1] == "unschedulable: 500 pods grouped by their 2 reasons"
    assert "Unschedulable (500)" in svg and svg.count("</text>") < 2000
    phases = dict((name, float(s)) for name, s in re.findall(
        r"(\w+)=([\d.]+)", err.split("timing:")[1]))
    assert phases["output"] < phases["plan"], phases     # the SVG costs less than the plan


def test_the_audit_at_scale_states_its_totals_within_the_bounds(tmp_path):
    status, svg, _err = _large_audit(tmp_path)
    assert status == 0
    _within_bounds(svg)
    figures = svg_check.audit_figures(svg)
    assert (figures["workloads"], figures["hosts"], figures["rows"]) == (WORKLOADS, 500, 60)
    caption = svg_check.caption(ET.fromstring(svg))
    assert caption[0] == "3,000 workload(s) with 2+ replicas (worst first), 500 host(s)"
    assert caption[1] == ("showing the 60 worst of 3,000 workloads; of the other 2,940, one "
                          "host takes over half of 266, over a third of 822, a third or less "
                          "of 1,852")
    assert caption[2] == ("showing 40 of the 60 hosts holding their replicas: those where one "
                          "loses most; the other 20 hold 80 of their 270 replicas (last column)")


def _long_plan():
    """A plan that fills every limit of the drawing, with names past its longest: 31
    hosts of 10 nodes, 14 pods a node, 11 workloads, 22 pods no node takes for 11 reasons
    (node i carries the labels s1 .. s(i % 12): pod k asks for sk and more CPU than any
    node has, so that each reason counts other nodes)."""
    long = "x" * svg_layout.LONGEST
    nodes = [node("%s-%03d" % (long, i), alloc=ALLOC, labels=dict(
        {"s%d" % k: "yes" for k in range(1, i % 12 + 1)}, **{KEY: "h%s-%02d" % (
            "y" * 55, i // 10)})) for i in range(310)]
    workloads = [deployment("%s-%02d" % ("w" * 240, k), replicas=395, cpu="10m",
                            labels={"app": "w%d" % k}) for k in range(11)]
    workloads += [deployment("%s-%02d" % ("u" * 240, k), replicas=2, cpu="100",
                             labels={"app": "u%d" % k}, nodeSelector={"s%d" % (k + 1): "yes"})
                  for k in range(11)]
    return nodes, workloads


def test_names_at_the_longest_keep_the_drawing_within_the_bounds():
    nodes, workloads = _long_plan()
    snap = cluster_from_objects([(o, "cluster.json") for o in nodes])
    pods, _, _ = workloads_from_objects([(w, "workloads.json") for w in workloads], snap)
    state = snap.state()
    result = planner.plan(state, Profile().framework(), pods, KEY)
    svg = placement_svg.render_svg(result, state)
    _within_bounds(svg)
    assert svg_check.plan_figures(svg)["nodes"] == len(nodes)
    long = "%s-%s" % ("w" * 240, "x" * 200)
    report = core.audit(
        [node("%s-%03d" % ("x" * 300, i), labels={KEY: "%s-%03d" % ("h" * 300, i)},
              alloc=ALLOC) for i in range(45)],
        [pod("%s-%02d-%02d" % (long, s, r), ns="n" * 63, on="%s-%03d" % ("x" * 300, r),
             owner=("StatefulSet", "%s-%02d" % (long, s)), phase="Running")
         for s in range(65) for r in range(45)], KEY)
    svg = audit_svg.render_svg(report)
    _within_bounds(svg)
    assert svg_check.audit_figures(svg)["replicas"] == 60 * 45


# --- what the captions say adds up to the input ------------------------------------------

@st.composite
def _clusters(draw):
    """(nodes, bound pods): up to 24 nodes on up to 8 hosts, some without the host label,
    some with a pod already."""
    n = draw(st.integers(1, 24))
    hosts = draw(st.integers(1, 8))
    bare = draw(st.sets(st.integers(0, n - 1), max_size=3))
    nodes = [node("w%02d" % i, labels={} if i in bare else {KEY: "h%d" % (i % hosts)},
                  alloc={"cpu": "4", "memory": "8Gi", "pods": "20"}) for i in range(n)]
    bound = [pod("old-%d" % j, on="w%02d" % i, phase="Running", cpu="100m")
             for j, i in enumerate(draw(st.lists(st.integers(0, n - 1), max_size=4)))]
    return nodes, bound


_WORKLOADS = st.lists(st.tuples(st.integers(1, 8), st.sampled_from(["fits", "no node", "big"])),
                      min_size=1, max_size=14)
_PLAN_LIMITS = st.builds(placement_svg.Limits, st.integers(1, 5), st.integers(1, 4),
                         st.integers(1, 4), st.integers(2, 10), st.integers(0, 6),
                         st.integers(1, 2))


@settings(max_examples=60)
@given(_clusters(), _WORKLOADS, _PLAN_LIMITS)
def test_what_a_plan_drawing_counts_adds_up_to_the_plan(cluster, wanted, limits):
    nodes, bound = cluster
    spec = {"fits": {"cpu": "100m"}, "no node": {"nodeSelector": NO_NODE}, "big": {"cpu": "8"}}
    workloads = [deployment("app-%d" % k, replicas=r, **spec[kind])
                 for k, (r, kind) in enumerate(wanted)]
    snap = cluster_from_objects([(o, "cluster.json") for o in nodes + bound])
    pods, _, _ = workloads_from_objects([(w, "workloads.json") for w in workloads], snap)
    state = snap.state()
    result = planner.plan(state, Profile().framework(), pods, KEY)
    svg = placement_svg.render_svg(result, state, limits)
    placed = [p for p in result.placements if p.node]
    assert svg_check.plan_figures(svg) == {
        "values": len({n["metadata"]["labels"].get(KEY) for n in nodes}), "nodes": len(nodes),
        "pods": len(result.placements), "placed": len(placed),
        "unplaced": len(result.placements) - len(placed),
        "workloads": len({p.pod.owner for p in placed})}
    assert svg_check.outside(svg) == []


@st.composite
def _audits(draw):
    """(nodes, pods, StatefulSets): up to 20 nodes on up to 8 hosts (some without the
    label), up to 12 StatefulSets, their replicas on any nodes, some not running."""
    n = draw(st.integers(1, 20))
    hosts = draw(st.integers(1, 8))
    bare = draw(st.sets(st.integers(0, n - 1), max_size=3))
    nodes = [node("w%02d" % i, labels={} if i in bare else {KEY: "h%d" % (i % hosts)},
                  alloc=ALLOC) for i in range(n)]
    sets = draw(st.lists(st.tuples(st.lists(st.integers(0, n - 1), min_size=1, max_size=6),
                                   st.integers(0, 2)), min_size=1, max_size=12))
    owners = [owner("StatefulSet", "db-%d" % s, replicas=len(on) + more)
              for s, (on, more) in enumerate(sets)]
    pods = [pod("db-%d-%d" % (s, r), on="w%02d" % i, owner=("StatefulSet", "db-%d" % s),
                phase="Running") for s, (on, _m) in enumerate(sets) for r, i in enumerate(on)]
    return nodes, pods, owners


@settings(max_examples=80)
@given(_audits(), st.builds(audit_svg.Limits, st.integers(1, 5), st.integers(1, 5)))
def test_what_an_audit_drawing_counts_adds_up_to_the_audit(cluster, limits):
    nodes, pods, owners = cluster
    report = core.audit(nodes, pods, KEY, owners=owners)
    svg = audit_svg.render_svg(report, limits)
    host = {n["metadata"]["name"]: n["metadata"]["labels"].get(KEY, "node/" + n["metadata"][
        "name"]) for n in nodes}
    replicas = {}                                   # workload -> [its pods' hosts]
    for p in pods:
        replicas.setdefault(p["metadata"]["ownerReferences"][0]["name"], []).append(
            host[p["spec"]["nodeName"]])
    desired = {o["metadata"]["name"]: o["spec"]["replicas"] for o in owners}
    every = [w for w in replicas if max(desired[w], len(replicas[w])) >= 2]
    drawn = [w for w in report.workloads if max(w.desired, w.running) >= 2][:limits.rows]
    left = [w.loss_ratio for w in report.workloads if max(w.desired, w.running) >= 2][
        limits.rows:]
    assert svg_check.audit_figures(svg) == {
        "workloads": len(every), "hosts": len({h for w in every for h in replicas[w]}),
        "rows": min(limits.rows, len(every)),
        "left out": [sum(1 for r in left if r > 0.5), sum(1 for r in left if 1 / 3 < r <= 0.5),
                     sum(1 for r in left if r <= 1 / 3)],
        "columns": len({h for w in drawn for h in replicas[w.name]}),
        "replicas": sum(len(replicas[w.name]) for w in drawn)}
    assert svg_check.outside(svg) == []


# --- in a browser ------------------------------------------------------------------------

def _misdrawn(svg, top, shot):
    """What the screenshot SHOT of SVG's rows from TOP shows otherwise than SVG lays out:
    paint outside the drawing, and each rect in those rows whose fill is not what shows
    2 px inside its left edge."""
    margin, (width, height, rows) = svg_check.MARGIN, shot
    _x, _y, w, h = svg_check.view_box(svg)
    out = [("outside", x, y) for y in range(height) for x in range(width)
           if not (0 <= x - margin < w and 0 <= y - margin + top < h)
           and not svg_check.close(rows[y][x], svg_check.PAGE, 8)][:5]
    for tag, fill, (x0, y0, x1, y1) in svg_check.boxes(svg):
        y = int((y0 + y1) / 2) - top + margin
        if tag == "rect" and margin <= y < height - margin and x1 - x0 > 4:
            want = (255, 255, 255) if fill == "#fff" else svg_check.rgb(fill)
            if not svg_check.close(rows[y][int(x0) + 2 + margin], want):
                out.append((fill, x0, y0, rows[y][int(x0) + 2 + margin]))
    return out


@pytest.mark.browser
@pytest.mark.slow
def test_chromium_draws_each_drawing_at_scale_from_its_title_to_its_foot(tmp_path):
    browser, margin = svg_check.chromium(), svg_check.MARGIN
    for name, draw in (("plan", _large_plan), ("audit", _large_audit)):
        svg = draw(tmp_path)[1]
        _x, _y, width, height = (int(v) for v in svg_check.view_box(svg))
        texts = [box for tag, _what, box in svg_check.boxes(svg) if tag == "text"]
        heading = texts[:1 + len(svg_check.caption(ET.fromstring(svg)))]  # title, caption
        head = int(max(box[3] for box in heading)) + 200
        for top, rows in ((0, head), (height - 400, 400)):
            size, shot = svg_check.screenshot(browser, svg, tmp_path, "%s-%d" % (name, top),
                                              top, rows)
            assert shot[:2] == size, name
            assert _misdrawn(svg, top, shot) == [], (name, top)
            for x0, y0, x1, y1 in heading if top == 0 else ():   # inked, inside its box
                ink = [x for y in range(int(y0), int(y1))
                       for x in range(int(x0), min(int(x1) + 40, width))
                       if max(shot[2][y + margin][x + margin]) < 128]
                assert ink and max(ink) < x1, (name, y0)
