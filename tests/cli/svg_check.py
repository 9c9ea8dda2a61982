"""What the SVG tests read: the box every drawn element takes (text measured as the
drawings measure it: the browser test checks that against real fonts), and PNG pixels
(stdlib only)."""
import math
import re
import struct
import xml.etree.ElementTree as ET
import zlib

from tacker_hwaffinity.cli import svg_layout



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
