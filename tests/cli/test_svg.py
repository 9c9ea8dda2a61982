"""The plan and audit SVGs: a legend, a title that fits, everything inside the viewBox
(measured with a width per character wider than any sans-serif font's), and, in a real
browser (marker browser: headless Chromium), drawn as laid out: the screenshot has the
drawing's size, nothing outside it, the title's text and the legend's colours where the
SVG puts them."""
import json
import os
import shutil
import subprocess

import pytest

from builders import node, pod
from ci_policy import unavailable
from tacker_hwaffinity.cli import audit_svg
from tacker_hwaffinity.cli.main import main

from . import svg_check

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLES = os.path.join(ROOT, "samples")
LONG = "compute-host-with-a-rather-long-name-in-rack-r17-row-b"
MARGIN = 20                     # page around the drawing in the browser test
PAGE = (255, 0, 255)            # the page's colour: the drawing paints none of it


def _long_names(tmp_path):
    """A cluster whose host, node and pod names are long, and a workload with a pod no
    node takes, for plan; the same hosts carrying a long-named StatefulSet, for audit."""
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
        pod("nowhere", cpu="1", nodeSelector={"no": "such-node"})]}))
    return str(cluster), str(workload)


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
    assert "ReplicaSet cnf/upf-58655487d8" in drawings["plan"]
    for colour, text in audit_svg.LEGEND:
        assert text in drawings["audit"] and (colour is None or colour in drawings["audit"])


def test_the_layout_check_finds_text_past_the_edge():
    svg = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 100 50">'
           '<text x="10" y="20" font-size="18">a title far too long</text></svg>')
    assert [b[1] for b in svg_check.outside(svg)] == ["a title far too long"]


# --- in a browser ------------------------------------------------------------------------

def _chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    unavailable("chromium is missing (tools/install-test-packages.sh browser)")


def _screenshot(browser, svg, tmp_path, name):
    """A PNG of SVG drawn inline in a page of colour PAGE, MARGIN px from its edges, with
    overflow shown: whatever the drawing paints outside its box shows on the page."""
    x0, y0, width, height = svg_check.view_box(svg)
    page = tmp_path / (name + ".html")
    page.write_text('<!DOCTYPE html><html><body style="margin:0;background:rgb%s">'
                    '<div style="position:absolute;left:%dpx;top:%dpx">%s</div></body></html>'
                    % (PAGE, MARGIN, MARGIN,
                       svg.replace("<svg ", '<svg style="overflow:visible;display:block" ', 1)))
    png = tmp_path / (name + ".png")
    size = (int(width) + 2 * MARGIN, int(height) + 2 * MARGIN)
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
         "--no-first-run", "--disable-background-networking", "--disable-component-update",
         "--disable-sync", "--hide-scrollbars", "--force-device-scale-factor=1",
         "--user-data-dir=%s" % (tmp_path / "profile"), "--screenshot=%s" % png,
         "--window-size=%d,%d" % size, page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and png.exists(), proc.stderr[-2000:]
    keep = os.environ.get("HWAFFINITY_SCREENSHOTS")     # to look at them: a directory
    if keep:
        os.makedirs(keep, exist_ok=True)
        shutil.copy(png, os.path.join(keep, name + ".png"))
    return size, svg_check.read_png(str(png))


def _close(a, b, tolerance=24):
    return all(abs(x - y) <= tolerance for x, y in zip(a, b))


def _hex(colour):
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


@pytest.mark.browser
def test_chromium_draws_each_drawing_whole_with_its_title_and_legend(capsys, tmp_path):
    browser = _chromium()
    for name, svg in _drawings(capsys, tmp_path).items():
        size, (width, height, rows) = _screenshot(browser, svg, tmp_path, name)
        assert (width, height) == size, name
        w, h = size[0] - 2 * MARGIN, size[1] - 2 * MARGIN
        spilled = [(x, y) for y in range(height) for x in range(width)
                   if not (MARGIN <= x < MARGIN + w and MARGIN <= y < MARGIN + h)
                   and not _close(rows[y][x], PAGE, 8)]
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
            assert _close(rows[cy][cx], _hex(fill)), (name, fill, rows[cy][cx])
