"""table.py: every line within the width unless one word or cell alone is wider, the
words kept in order, and width=None as one line each."""
from hypothesis import example, given, strategies as st

from tacker_hwaffinity import table

WORD = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1, max_size=30)
LONG_WORD = st.text(st.characters(min_codepoint=33, max_codepoint=126), min_size=1,
                    max_size=140)
TEXT = st.lists(st.one_of(WORD, LONG_WORD), max_size=40).map(" ".join)
CELL = st.lists(WORD, min_size=1, max_size=3).map(" ".join) | LONG_WORD


def _within(line, width, atoms):
    """LINE fits WIDTH, or holds only one of ATOMS (a word or a cell: never cut)."""
    return len(line) <= width or line.strip() in atoms


@given(TEXT, st.integers(20, 120))
@example("Note: " + "word " * 50, 100)
def test_wrap_fits_and_keeps_the_words(text, width):
    lines = table.wrap(text, width)
    words = text.split()
    assert all(_within(ln, width, set(words)) for ln in lines), lines
    assert " ".join(lines).split() == words
    assert all(ln.startswith(table.HANG) for ln in lines[1:])


@given(st.integers(2, 5).flatmap(lambda n: st.tuples(
    st.lists(st.text("ABCDEFGHIJ", min_size=1, max_size=10), min_size=n, max_size=n),
    st.lists(st.tuples(st.lists(CELL, min_size=n - 1, max_size=n - 1), TEXT),
             max_size=8))))
def test_a_table_fits_the_width_and_keeps_every_word_in_order(spec):
    header, body = spec
    rows = [tuple(header)] + [tuple(cells) + (last,) for cells, last in body]
    lines = table.table(rows)
    atoms = {c for r in rows for c in r[:-1]} | {w for r in rows for w in r[-1].split()}
    assert all(_within(ln, table.WIDTH, atoms) for ln in lines), lines
    assert " ".join(lines).split() == [w for r in rows for c in r for w in c.split()]
    assert len(table.table(rows, width=None)) == len(rows)


def test_the_last_column_wraps_under_its_own_column():
    rows = [("NODE", "TOTAL", "REASONS"), ("worker-0", "1", "word " * 30)]
    lines = table.table(rows)
    assert lines[0] == "NODE      TOTAL  REASONS"
    assert lines[1].startswith("worker-0  1      word word")
    assert lines[2].startswith(" " * 17 + "word") and len(lines) == 3
    assert max(len(ln) for ln in lines) <= table.WIDTH


def test_a_last_cell_with_no_room_beside_its_row_goes_below_indented():
    rows = [("POD", "NODE", "REASONS"), ("p" * 70, "n" * 20, "word " * 10)]
    lines = table.table(rows)
    assert lines[1] == "p" * 70 + "  " + "n" * 20
    assert lines[2] == table.HANG + ("word " * 10).strip()


def test_a_name_longer_than_the_width_is_never_cut():
    name = "x" * 130
    lines = table.table([("POD", "NODE"), (name, "worker-1")])
    assert lines[1] == name and lines[2].strip() == "worker-1"
    assert table.wrap("Note: %s end" % name) == ["Note:", table.HANG + name, table.HANG + "end"]


def test_width_none_is_the_unwrapped_layout():
    rows = [("NODE", "REASONS"), ("worker-0", "word " * 40)]
    assert table.table(rows, None) == ["NODE      REASONS", "worker-0  " + ("word " * 40).strip()]
    assert table.wrap("x " * 80, None) == [("x " * 80).strip()]
