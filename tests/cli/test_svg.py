"""The plan and audit SVGs: a legend, a title that fits, everything inside the viewBox
(measured with a width per character wider than any sans-serif font's), and, in a real
browser (marker browser: headless Chromium), drawn as laid out: the screenshot has the
drawing's size, nothing outside it, the title's text and the legend's colours where the
SVG puts them."""
import json
import os

import pytest

from builders import node, pod
from tacker_hwaffinity.cli import audit_svg
from tacker_hwaffinity.cli.main import main

from . import svg_check

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "samples")
LONG = "compute-host-with-a-rather-long-name-in-rack-r17-row-b"
MARGIN, PAGE = svg_check.MARGIN, svg_check.PAGE


def _long_names(tmp_path):
    """A cluster whose host, node and pod names are long, a workload with a pod no node
    takes and five long-named DaemonSets that run on no node, for plan; the same hosts
    carrying a long-named StatefulSet, for audit."""
    nodes = [node("worker-%d-%s" % (i, "x" * 30), labels={"CIS-node": "%s-%d" % (LONG, i)},
                  alloc={"cpu": "4", "memory": "8Gi", "pods": "110"}) for i in range(3)]
    cluster = tmp_path / "cluster.json"
    running = [pod("db-%s-%d" % ("y" * 50, i), on=nodes[i % 2]["metadata"]["name"],
                   owner=("StatefulSet", "db-" + "y" * 50), labels={"app": "db"}, phase="Running")
               for i in range(3)]
    cluster.write_text(json.dumps({"apiVersion": "v1", "kind": "List",
                                   "items": nodes + running}))
    workload = tmp_path / "pods.json"
    workload.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        pod("web-%s-%d" % ("z" * 60, i), cpu="1") for i in range(4)] + [
        pod("nowhere", cpu="1", nodeSelector={"no": "such-node"})] + [
        _daemonset("sriov-device-plugin-%d-%s" % (i, "d" * 200)) for i in range(5)]}))
    return str(cluster), str(workload)


def _daemonset(name):
    """A DaemonSet whose node selector no node matches."""
    labels = {"app": name[:63]}
    return {"apiVersion": "apps/v1", "kind": "DaemonSet",
            "metadata": {"name": name, "namespace": "kube-system"},
            "spec": {"selector": {"matchLabels": labels}, "template": {
                "metadata": {"labels": labels},
                "spec": {"nodeSelector": {"sriov": "true"},
                         "containers": [{"name": "c", "image": "i"}]}}}}


def _svg(capsys, argv):
    main(argv)
    return capsys.readouterr().out


def _drawings(capsys, tmp_path):
    cluster, workload = _long_names(tmp_path)
    return {
        "plan": _svg(capsys, ["plan", "--cluster", os.path.join(SAMPLES, "cluster.yaml"),
                              os.path.join(SAMPLES, "cnf", "upf-required.yaml"),
                              os.path.join(SAMPLES, "cnf", "smf-preferred.yaml"), "-o", "svg"]),
        "audit": _svg(capsys, ["audit", "--cluster", os.path.join(SAMPLES, "audit",
                                                                  "cluster.yaml"), "-o", "svg"]),
        "plan-long-names": _svg(capsys, ["plan", "--cluster", cluster, workload, "-o", "svg"]),
        "audit-long-names": _svg(capsys, ["audit", "--cluster", cluster, "-o", "svg"]),
    }


def test_every_drawing_has_a_legend_and_stays_inside_its_view_box(capsys, tmp_path):
    for name, svg in _drawings(capsys, tmp_path).items():
        assert svg_check.outside(svg) == [], name
        assert '<g class="legend">' in svg, name
        texts = [what for tag, what, _ in svg_check.boxes(svg) if tag == "text"]
        assert texts[0].startswith(("Planned placement per CIS-node",
                                    "Replicas per CIS-node")), name
    drawings = _drawings(capsys, tmp_path)
    assert "unschedulable" in drawings["plan-long-names"]
    assert drawings["plan-long-names"].count("DaemonSet kube-system/sriov-device-plugin-") == 3
    assert "+2 more DaemonSets that run on no node" in drawings["plan-long-names"]
    assert "ReplicaSet cnf/upf-58655487d8" in drawings["plan"]
    for colour, text in audit_svg.LEGEND:
        assert text in drawings["audit"] and (colour is None or colour in drawings["audit"])


def test_the_layout_check_finds_text_past_the_edge():
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 50">'
           '<text x="10" y="20" font-size="18">a title far too long</text></svg>')
    assert [b[1] for b in svg_check.outside(svg)] == ["a title far too long"]


# --- in a browser ------------------------------------------------------------------------

@pytest.mark.browser
def test_chromium_draws_each_drawing_whole_with_its_title_and_legend(capsys, tmp_path):
    browser = svg_check.chromium()
    for name, svg in _drawings(capsys, tmp_path).items():
        size, (width, height, rows) = svg_check.screenshot(browser, svg, tmp_path, name)
        assert (width, height) == size, name
        w, h = size[0] - 2 * MARGIN, size[1] - 2 * MARGIN
        spilled = [(x, y) for y in range(height) for x in range(width)
                   if not (MARGIN <= x < MARGIN + w and MARGIN <= y < MARGIN + h)
                   and not svg_check.close(rows[y][x], PAGE, 8)]
        assert spilled == [], "%s: drawn outside the drawing at %s" % (name, spilled[:5])
        assert rows[MARGIN][MARGIN] == (255, 255, 255), name     # its white canvas
        assert rows[MARGIN + h - 1][MARGIN + w - 1] == (255, 255, 255), name
        tag, title, (x0, y0, x1, y1) = svg_check.boxes(svg)[1]
        assert tag == "text"
        ink = [x for y in range(MARGIN + int(y0), MARGIN + int(y1))
               for x in range(MARGIN, MARGIN + w) if max(rows[y][x]) < 96]
        assert ink, "%s: no title drawn" % name
        assert min(ink) < MARGIN + 20 and max(ink) < MARGIN + w - 10, (name, title)
        swatches = [(fill, box) for tag, fill, box in svg_check.boxes(
            svg.split('<g class="legend">')[1].split("</g>")[0]
            .join(['<svg xmlns="http://www.w3.org/2000/svg">', "</svg>"]))
            if tag == "rect"]
        assert swatches, name
        for fill, (bx0, by0, bx1, by1) in swatches:
            cx, cy = MARGIN + int((bx0 + bx1) / 2), MARGIN + int((by0 + by1) / 2)
            assert svg_check.close(rows[cy][cx], svg_check.rgb(fill)), (name, fill, rows[cy][cx])
