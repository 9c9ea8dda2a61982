"""Text that fits a terminal: aligned tables whose last column wraps, and notes that wrap.

Every text renderer lays its lines out here, so that each line is at most WIDTH (100)
columns, whatever the terminal (no width detection: a pipe and a terminal get the same
text). Nothing is ever cut: a single word or cell longer than the width overflows its line.
``width=None`` gives the unwrapped layout (one line per row and per note).
"""
import textwrap
from collections.abc import Iterable, Sequence

WIDTH = 100
GAP = "  "            # between columns
HANG = " " * 4        # continuation lines of a note, or of a last cell with no room beside
MIN_LAST = 24         # the least room worth wrapping a last cell beside its row
MIN_COLUMN = 8        # a column is never narrowed below this (nor below its header)


def wrap(text: str, width: int | None = WIDTH, indent: str = "",
         hang: str = HANG) -> list[str]:
    """TEXT as lines of at most WIDTH columns: the first starts with INDENT, the others
    with INDENT + HANG; words are never cut (a longer word has a line of its own).
    WIDTH None: one line."""
    if width is None or len(indent) + len(text) <= width:
        return [(indent + text).rstrip()]
    return textwrap.wrap(text, width=width, initial_indent=indent,
                         subsequent_indent=indent + hang, break_long_words=False,
                         break_on_hyphens=False) or [indent.rstrip()]


def notes(prefix: str, texts: Iterable[object], width: int | None = WIDTH) -> list[str]:
    """Each of TEXTS as "PREFIX text", wrapped with a hanging indent."""
    return [line for t in texts for line in wrap("%s%s" % (prefix, t), width)]


def _fit(widths, heads, budget):
    """WIDTHS narrowed, widest first, until they and their gaps fit in BUDGET, but no
    column below its header or MIN_COLUMN (then they stay over)."""
    widths = list(widths)
    floors = [max(len(h), MIN_COLUMN) for h in heads]
    while sum(widths) + len(GAP) * len(widths) > budget:
        narrowable = [i for i, w in enumerate(widths) if w > floors[i]]
        if not narrowable:
            break
        i = max(narrowable, key=lambda j: widths[j])
        widths[i] -= 1
    return widths


def _at(line, start):
    """LINE padded to column START, or followed by a gap when it already reaches it."""
    return line.ljust(start) if not line.strip() or len(line) + len(GAP) <= start \
        else line + GAP


def _lead(cells, widths, width):
    """The lines holding CELLS (all but the last) at their columns: a cell that would
    pass WIDTH where it falls starts a new line, at its own column if it fits there, else
    as far right as it fits. Returns (full lines, the open line padded to the last column).
    """
    lines, line = [], ""
    starts = [sum(widths[:i]) + len(GAP) * i for i in range(len(widths) + 1)]
    for i, cell in enumerate(cells):
        placed = _at(line, starts[i])
        if width is not None and line.strip() and len(placed) + len(cell) > width:
            lines.append(line.rstrip())
            placed = " " * min(starts[i], max(0, width - len(cell)))
        line = placed + cell
    return lines, _at(line, starts[-1])


def table(rows: Sequence[Sequence[str]], width: int | None = WIDTH) -> list[str]:
    """ROWS (the first the header, every row a sequence of strings) as aligned lines.

    The last column wraps under its row, at its own column when at least MIN_LAST columns
    (and its longest word) fit there, else on the following lines indented by HANG. When
    the other columns are too wide together, the widest are narrowed (never below their
    header): a cell longer than its column then pushes the rest of its row right, or down
    a line.
    """
    if not rows:
        return []
    count = len(rows[0]) - 1
    widths = [max(len(r[i]) for r in rows) for i in range(count)]
    if width is not None:
        widths = _fit(widths, rows[0][:count], width - MIN_LAST)
    out = []
    for row in rows:
        lines, line = _lead(row[:count], widths, width)
        out.extend(lines)
        last = row[count]
        if width is None or not last.strip() or len(line) + len(last) <= width:
            out.append((line + last).rstrip())
        elif width - len(line) >= max(MIN_LAST, max(len(w) for w in last.split())):
            out.extend(textwrap.wrap(last, width=width, initial_indent=line,
                                     subsequent_indent=" " * len(line),
                                     break_long_words=False, break_on_hyphens=False))
        else:
            out.append(line.rstrip())
            out.extend(wrap(last, width, indent=HANG, hang=""))
    return out
