"""What the CLI's SVG drawings share: the room text takes, the heading, the legend and the
document, so that everything drawn lies inside the viewBox.

Text is measured without a font: a conservative width per character (wider than the
average of DejaVu Sans and Liberation Sans, the sans-serif fonts of Debian's browsers,
over names and digits), so that a drawing is laid out for wider text than it gets. A text
holds at most LONGEST characters (``shown``), so that no input makes a drawing larger
than browsers draw.
"""
from xml.sax.saxutils import escape

PAD = 10
TITLE_SIZE, SUBTITLE_SIZE, LEGEND_SIZE = 18, 13, 12
# width of a character in font sizes (regular, bold): DejaVu Sans's digits take 0.64,
# its lower case 0.28-0.98 (0.56 on average), its capitals 0.55-0.99 (0.69)
_EM = {False: 0.66, True: 0.74}
_SWATCH = 14
# characters of one text, so that a drawing's size is bounded whatever the input: the
# longest name Kubernetes takes (a pod's namespace/name: 63 + 1 + 253) fits
LONGEST = 320
_LINE = SUBTITLE_SIZE + 5     # from one caption line to the next


def cut(text, most):
    """TEXT, cut with an ellipsis to MOST characters."""
    return text if len(text) <= most else text[:most - 1] + "\u2026"


def shown(text):
    """TEXT as a drawing holds it: cut to LONGEST characters, and XML-escaped."""
    return escape(cut(text, LONGEST))


def text_width(text, size, bold=False):
    """The most TEXT at font SIZE can take across, in px, as ``shown``."""
    return int(min(len(text), LONGEST) * size * _EM[bold]) + 1


def fitting(text, room, size):
    """TEXT, cut with an ellipsis to what ROOM px hold at font SIZE (for a name whose
    whole is in a tooltip)."""
    if text_width(text, size) <= room:
        return text
    return cut(text, max(1, int((room - 1) / (size * _EM[False]))))


def heading(title, subtitle, caption=()):
    """(svg parts, width, height) of the drawing's title, the line under it and the
    CAPTION's lines under that (what a drawing at scale leaves out)."""
    lines = [subtitle] + list(caption)
    parts = ['<text x="%d" y="%d" font-size="%d" font-weight="bold">%s</text>'
             % (PAD, PAD + TITLE_SIZE, TITLE_SIZE, shown(title))]
    for i, line in enumerate(lines):
        parts.append('<text x="%d" y="%d" font-size="%d" fill="#444">%s</text>'
                     % (PAD, 2 * PAD + TITLE_SIZE + SUBTITLE_SIZE + i * _LINE,
                        SUBTITLE_SIZE, shown(line)))
    width = 2 * PAD + max([text_width(title, TITLE_SIZE, True)]
                          + [text_width(line, SUBTITLE_SIZE) for line in lines])
    return parts, width, 3 * PAD + TITLE_SIZE + SUBTITLE_SIZE + (len(lines) - 1) * _LINE


def count(n):
    """N as a caption writes it: 2,000."""
    return "{:,}".format(n)


def counted(n, noun):
    """N NOUNs as a caption writes them: 1 pod, 2,000 pods."""
    return "%s %s%s" % (count(n), noun, "" if n == 1 else "s")


def most(items, limit, weight):
    """ITEMS when LIMIT or fewer; else the LIMIT of them with the greatest WEIGHT(item),
    greatest first (ties in the ITEMS' order)."""
    if len(items) <= limit:
        return list(items)
    return sorted(items, key=lambda item: -weight(item))[:limit]


def _item_width(colour, text):
    return (_SWATCH + 6 if colour else 0) + text_width(text, LEGEND_SIZE) + 2 * PAD


def legend_min_width(items):
    """The least drawing width that holds each of the legend's ITEMS on a line."""
    return PAD + max((_item_width(c, t) for c, t in items), default=0)


def legend(items, y, width):
    """(svg parts, height) of a legend at Y: ITEMS are (colour or None, text), laid out
    left to right and onto further lines within WIDTH; a None colour is text alone."""
    parts = ['<g class="legend">']
    x, line_h, lines = PAD, _SWATCH + 6, 1
    for colour, text in items:
        need = _item_width(colour, text)
        if x > PAD and x + need > width:
            x, lines = PAD, lines + 1
        top = y + (lines - 1) * line_h
        tx = x
        if colour:
            parts.append('<rect x="%d" y="%d" width="%d" height="%d" rx="2" fill="%s"/>'
                         % (x, top, _SWATCH, _SWATCH, colour))
            tx += _SWATCH + 6
        parts.append('<text x="%d" y="%d" font-size="%d">%s</text>'
                     % (tx, top + _SWATCH - 2, LEGEND_SIZE, shown(text)))
        x += need
    parts.append("</g>")
    return parts, lines * line_h


def document(width, height, parts):
    """The SVG document of PARTS on a white WIDTH x HEIGHT canvas (its viewBox)."""
    return ('<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
            'viewBox="0 0 %d %d" font-family="sans-serif">\n'
            '<rect width="%d" height="%d" fill="#fff"/>\n%s\n</svg>\n'
            % (width, height, width, height, width, height, "\n".join(parts)))
