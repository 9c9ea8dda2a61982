"""What the SVG tests read: the box every drawn element takes (text measured as the
drawings measure it: the browser test checks that against real fonts), the figures a
plan or audit drawing states and draws (checked against each other), screenshots by
headless Chromium and their PNG pixels (stdlib only)."""
import math
import os
import re
import shutil
import struct
import subprocess
import xml.etree.ElementTree as ET
import zlib

from ci_policy import unavailable
from tacker_hwaffinity.cli import svg_layout

MARGIN = 20                     # page around the drawing in a screenshot
PAGE = (255, 0, 255)            # the page's colour: the drawing paints none of it
_NS = "{http://www.w3.org/2000/svg}"
_N = r"([\d,]+)"                # a count as captions write it: 2,000


def _rotated(corners, transform):
    m = re.fullmatch(r"rotate\(([-\d.]+) ([-\d.]+) ([-\d.]+)\)", transform or "")
    if not m:
        return corners
    a, cx, cy = (float(v) for v in m.groups())
    c, s = math.cos(math.radians(a)), math.sin(math.radians(a))
    return [(cx + (x - cx) * c - (y - cy) * s, cy + (x - cx) * s + (y - cy) * c)
            for x, y in corners]


def view_box(svg):
    root = ET.fromstring(svg)
    return tuple(float(v) for v in root.get("viewBox").split())


def boxes(svg):
    """[(tag, text or fill, (x0, y0, x1, y1))] of every rect and text of SVG."""
    out = []
    for el in ET.fromstring(svg).iter():
        tag = el.tag.rsplit("}", 1)[-1]
        if tag == "rect":
            x, y = float(el.get("x", 0)), float(el.get("y", 0))
            out.append((tag, el.get("fill"), (x, y, x + float(el.get("width")),
                                              y + float(el.get("height")))))
        elif tag == "text":
            size = float(el.get("font-size", 16))
            w = svg_layout.text_width(el.text or "", size, el.get("font-weight") == "bold")
            x, y = float(el.get("x")), float(el.get("y"))
            if el.get("text-anchor") == "middle":
                x -= w / 2
            corners = _rotated([(x, y - size), (x + w, y - size), (x, y + 0.3 * size),
                                (x + w, y + 0.3 * size)], el.get("transform"))
            xs, ys = [p[0] for p in corners], [p[1] for p in corners]
            out.append((tag, el.text, (min(xs), min(ys), max(xs), max(ys))))
    return out


def outside(svg):
    """The elements of SVG that reach outside its viewBox."""
    x0, y0, w, h = view_box(svg)
    return [(tag, what, box) for tag, what, box in boxes(svg)
            if box[0] < x0 or box[1] < y0 or box[2] > x0 + w or box[3] > y0 + h]


def close(a, b, tolerance=24):
    """Whether the colours A and B ((r, g, b)) differ by TOLERANCE at most in each."""
    return all(abs(x - y) <= tolerance for x, y in zip(a, b))


def rgb(colour):
    """(r, g, b) of COLOUR, #rrggbb."""
    return tuple(int(colour[i:i + 2], 16) for i in (1, 3, 5))


def read_png(path):
    """(width, height, rows): rows of (r, g, b) tuples of an 8-bit RGB or RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, []
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0, (depth, colour)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    raw = zlib.decompress(b"".join(idat))
    bpp = 4 if colour == 6 else 3
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for r in range(height):
        start = r * (stride + 1)
        line = _unfilter(raw[start], bytearray(raw[start + 1:start + 1 + stride]), prev, bpp)
        rows.append([tuple(line[i:i + 3]) for i in range(0, stride, bpp)])
        prev = line
    return width, height, rows


def _unfilter(kind, line, prev, bpp):
    """LINE of a PNG with its filter KIND (0-4) undone, PREV the line above."""
    for i in range(len(line)):
        a = line[i - bpp] if i >= bpp else 0
        b = prev[i]
        c = prev[i - bpp] if i >= bpp else 0
        if kind == 1:
            line[i] = (line[i] + a) & 255
        elif kind == 2:
            line[i] = (line[i] + b) & 255
        elif kind == 3:
            line[i] = (line[i] + (a + b) // 2) & 255
        elif kind == 4:
            p = a + b - c
            pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    return line


# --- the figures a drawing states --------------------------------------------------------

def number(text):
    """The count TEXT (2,000) as an int."""
    return int(text.replace(",", ""))


def _numbers(pattern, line):
    m = re.fullmatch(pattern.replace("#", _N), line)
    return m and [None if g is None else number(g) for g in m.groups()]


def _lines(pattern, lines):
    """The numbers of the one line of LINES matching PATTERN (#: a count), or None."""
    found = [got for got in (_numbers(pattern, line) for line in lines) if got]
    assert len(found) <= 1, (pattern, found)
    return found[0] if found else None


def caption(root):
    """The lines under a drawing's title: its counts, then what it leaves out."""
    return [el.text for el in root if el.tag == _NS + "text" and el.get("fill") == "#444"]


def legend(root):
    """[(swatch colour or None, text)] of a drawing's legend."""
    group = [g for g in root if g.get("class") == "legend"][0]
    items, colour = [], None
    for el in group:
        if el.tag == _NS + "rect":
            colour = el.get("fill")
        else:
            items.append((colour, el.text))
            colour = None
    return items


def _texts(root, pattern):
    """The numbers of every text of ROOT matching PATTERN (#: a count)."""
    return [got for got in (_numbers(pattern, el.text or "") for el in root.iter(_NS + "text"))
            if got]


def plan_figures(svg):
    """The totals a plan drawing adds up to, its caption checked against what it draws:
    {values, nodes, pods, placed, unplaced, workloads}."""
    root = ET.fromstring(svg)
    lines = caption(root)
    m = re.fullmatch(_N + " of " + _N + r" pods placed across [\d,]+ (.+) value\(s\)", lines[0])
    placed, pods, key = number(m[1]), number(m[2]), m[3]
    boxes = [el.text for el in root.iter(_NS + "text") if el.get("font-weight") == "bold"
             and el.text.startswith(key + ": ")]
    rects = list(root.iter(_NS + "rect"))
    nodes = len([r for r in rects if r.get("stroke") == "#888" and not r.get("stroke-dasharray")])
    pod_rects = len([r for r in rects if r.find(_NS + "title") is not None])
    more_nodes = sum(n for n, in _texts(root, r"\+# more nodes?"))
    in_more = sum(n for n, in _texts(root, r"# pods? planned"))
    more_pods = sum(n for n, in _texts(root, r"\+# more pods?"))
    values = _lines(r"showing # of # boxes: the # receiving the most planned pods; "
                          r"the other # hold # nodes? and # pods? planned", lines)
    if values:
        assert values[0] == values[2] == len(boxes) and values[3] == values[1] - values[0]
    values = values or [len(boxes), len(boxes), len(boxes), 0, 0, 0]
    in_boxes = _lines(r"in those boxes, showing # of # nodes: per box the # receiving the "
                            r"most planned pods; the other # \(\+N more nodes\) receive # pods? "
                            r"planned", lines) or [nodes, nodes, 0, 0, 0]
    assert in_boxes[:2] + in_boxes[3:] == [nodes, nodes + more_nodes, more_nodes, in_more]
    on_nodes = _lines(r"on those nodes, showing # of # planned pods: per node the first "
                            r"#; the other # are counted \(\+N more pods\)", lines) \
        or [pod_rects, pod_rects, 0, 0]
    assert on_nodes[:2] + on_nodes[3:] == [pod_rects, pod_rects + more_pods, more_pods]
    assert pod_rects + more_pods + in_more + values[5] == placed
    return {"values": values[1], "nodes": nodes + more_nodes + values[4], "pods": pods,
            "placed": placed, "unplaced": _unplaced(root, lines, pods - placed),
            "workloads": _workloads(root, lines)}


def _workloads(root, lines):
    """How many workloads with pods placed a plan drawing's legend and caption count."""
    named = [t for c, t in legend(root) if c and t not in ("the other workloads",
                                                           "unschedulable")]
    grey = _lines(r"colours: # of the # workloads with pods placed, those with the most; "
                        r"grey: the other # \(# pods? placed\)", lines)
    if grey:
        assert grey[0] == len(named) and grey[1] == grey[0] + grey[2], (grey, len(named))
    return len(named) + (grey[2] if grey else 0)


def _unplaced(root, lines, count):
    """The COUNT unschedulable pods of a plan drawing, as its section lists them."""
    red = [el.text for el in root.iter(_NS + "text") if el.get("fill") == "#bb0000"]
    if not count:
        assert red == []
        return 0
    assert red[0] == "Unschedulable (%s)" % format(count, ",")
    grouped = _lines(r"unschedulable: # pods? grouped by their # reasons?"
                           r"(?:; showing the # with the most pods, the other # hold # pods?)?",
                     lines)
    if not grouped:
        assert len(red) - 1 == count
        return count
    reasons = [got[0] for got in (_numbers(r"# pods?: .*", t) for t in red[1:]) if got]
    rest = _lines(r"\+# more pods? for # other reasons?", red[1:]) or [0, 0]
    assert (grouped[0], grouped[1]) == (sum(reasons) + rest[0], len(reasons) + rest[1])
    assert grouped[2:] in ([None, None, None], [len(reasons)] + rest[1:] + rest[:1])
    return sum(reasons) + rest[0]


def audit_figures(svg):
    """The totals an audit drawing adds up to, its caption checked against what it draws:
    {workloads, hosts, rows, left out (by colour: red, orange, green), columns (hosts of
    the drawn workloads), replicas (theirs)}."""
    root = ET.fromstring(svg)
    lines = caption(root)
    workloads, hosts = _numbers(r"# workload\(s\) with 2\+ replicas \(worst first\), "
                                r"# host\(s\)", lines[0])
    labels = [el for el in root if el.tag == _NS + "text" and el.get("font-size") == "12"
              and el.get("fill") is None]
    heads = [el.text for el in root if el.get("transform")]
    cells, other_cells, tip = [], [], None
    for el in root:
        if el.tag == _NS + "rect" and el.find(_NS + "title") is not None:
            tip = el.find(_NS + "title").text
        elif el.get("text-anchor") == "middle":
            (other_cells if re.search(r" on [\d,]+ other hosts?: ", tip) else cells).append(
                int(el.text))
    rows = _lines(r"showing the # worst of # workloads; of the other #, one host takes "
                        r"over half of #, over a third of #, a third or less of #", lines)
    if rows:
        assert rows[:2] + rows[2:3] == [len(labels), workloads, workloads - len(labels)]
        assert sum(rows[3:]) == rows[2]
    others = _lines(r"showing # of the # hosts holding their replicas: those where one "
                          r"loses most; the other # hold # of their # replicas \(last column\)",
                    lines)
    if others:
        assert heads[-1] == "other %s host%s" % (format(others[2], ","), "s" * (others[2] != 1))
        assert others[:3] == [len(heads) - 1, len(heads) - 1 + others[2], others[2]]
        assert others[3:] == [sum(other_cells), sum(cells) + sum(other_cells)]
    else:
        assert other_cells == []
    return {"workloads": workloads, "hosts": hosts, "rows": len(labels),
            "left out": rows[3:] if rows else [0, 0, 0],
            "columns": others[1] if others else len(heads),
            "replicas": sum(cells) + sum(other_cells)}


# --- in a browser ------------------------------------------------------------------------

def chromium():
    """The path of Debian's Chromium; the test is unavailable without it."""
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    unavailable("chromium is missing (tools/install-test-packages.sh browser)")


def screenshot(browser, svg, tmp_path, name, top=0, height=None):
    """(window size, (width, height, rows)): a PNG of SVG drawn inline in a page of colour
    PAGE, MARGIN px from its edges, with overflow shown (whatever the drawing paints
    outside its box shows on the page); of its rows TOP to TOP + HEIGHT (default: all),
    with MARGIN px of the page or of the drawing around them. Row R of the PNG shows the
    drawing's row R - MARGIN + TOP."""
    x0, y0, width, full = view_box(svg)
    height = full - top if height is None else height
    page = tmp_path / (name + ".html")
    page.write_text('<!DOCTYPE html><html><body style="margin:0;background:rgb%s">'
                    '<div style="position:absolute;left:%dpx;top:%dpx">%s</div></body></html>'
                    % (PAGE, MARGIN, MARGIN - top,
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
    return size, read_png(str(png))
