"""doc/security.md names a test for every row: each one it names exists.

A row's test cell names ``tests/<file>.py::<test>``, or ``::<test>`` for another test
of the file named last before it in that column of the table; a table whose test
column's header names a file (``test (`tests/x.py`)``) names bare tests of that file.
A parametrised case (``name[case]``) counts as its function.
"""
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "doc", "security.md")
_FILE = re.compile(r"tests/[\w/]+\.py")
_CODE = re.compile(r"`([^`]+)`")


def _cells(line):
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _named_tests():
    """[(row's first cell, test file, test name)] for every test the tables name."""
    named, header, current = [], None, None
    with open(DOC, encoding="utf-8") as f:
        lines = f.read().splitlines()
    for line in lines:
        if not line.startswith("|"):
            header = current = None
            continue
        cells = _cells(line)
        if header is None:
            header = cells
            continue
        if set(line) <= set("|-: "):
            continue
        column = next((i for i, h in enumerate(header) if h.startswith("test")), None)
        if column is None or column >= len(cells):
            continue
        base = _FILE.search(header[column])
        current = base.group(0) if base else current
        for code in _CODE.findall(cells[column]):
            found = _FILE.search(code)
            if found:
                current = found.group(0)
            name = code.split("::", 1)[1] if "::" in code else (None if found else code)
            if name:
                named.append((cells[0], current, name.split("[", 1)[0].strip()))
    return named


def test_the_tables_name_tests():
    assert len(_named_tests()) >= 60


def test_every_test_the_tables_name_exists():
    missing = []
    for row, path, name in _named_tests():
        full = os.path.join(ROOT, path) if path else None
        if full is None or not os.path.exists(full):
            missing.append("%s: %s (no file %s)" % (row, name, path))
            continue
        with open(full, encoding="utf-8") as f:
            if not re.search(r"^\s*def %s\(" % re.escape(name), f.read(), re.M):
                missing.append("%s: %s not in %s" % (row, name, path))
    assert not missing, "\n".join(missing)
