"""Input that is not UTF-8 (``objects.yamlio.read_text``): the error names the file (or
``<stdin>``), and the line, column and byte offset of the first byte that is not, for
YAML and JSON alike; line ends are kept as they are, which both read."""
import io
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import yamlio

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
YAML = b"apiVersion: v1\nkind: Pod\nmetadata:\n  name: caf\xc3\xa9-\xff\n"  # caf\u00e9-, 0xff
JSON = b'{\n  "kind": "Pod",\n  "metadata": {"name": "\xc3\xa9t\xe9"}\n}\n'


def error(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data)
    with pytest.raises(InputError) as e:
        yamlio.load_objects([str(path)])
    return e.value


def test_yaml_names_line_column_and_offset_of_the_first_bad_byte(tmp_path):
    e = error(tmp_path, "p.yaml", YAML)
    assert e.source == str(tmp_path / "p.yaml")
    assert e.message == ("not UTF-8 text: byte 0xff at line 4, column 14 (byte offset %d): "
                         "invalid start byte" % YAML.index(b"\xff"))


def test_json_too(tmp_path):
    e = error(tmp_path, "p.json", JSON)
    # line 3 is '  "metadata": {"name": "\u00e9t' then the bad byte: 26 characters before it
    assert e.message == ("not UTF-8 text: byte 0xe9 at line 3, column 27 (byte offset %d): "
                         "invalid continuation byte" % JSON.index(b"\xe9"))


def test_a_sequence_cut_short_at_the_end(tmp_path):
    e = error(tmp_path, "p.yaml", b"kind: Pod\nmetadata: {name: \xe2\x82")
    assert e.message == ("not UTF-8 text: byte 0xe2 at line 2, column 18 (byte offset 27): "
                         "unexpected end of data")


def _stdin_run(code, data):
    """CODE run by Python with DATA on its real standard input, whose encoding is set to
    Latin-1: the text must not depend on it."""
    env = dict(os.environ, PYTHONPATH=ROOT, PYTHONIOENCODING="latin-1")
    return subprocess.run([sys.executable, "-c", code], input=data, capture_output=True,
                          env=env)


def test_standard_input_is_read_as_bytes_and_named_stdin():
    done = _stdin_run("from tacker_hwaffinity.objects import yamlio\n"
                      "try:\n    yamlio.load_objects(['-'])\n"
                      "except Exception as e:\n    print(e)\n", b"kind: Pod\n\x80\n")
    assert done.stdout.decode() == ("<stdin>: not UTF-8 text: byte 0x80 at line 2, column 1 "
                                    "(byte offset 10): invalid start byte\n"), done.stderr


def test_utf8_standard_input_loads_whatever_its_encoding_says():
    done = _stdin_run("from tacker_hwaffinity.objects import yamlio\n"
                      "print(ascii(yamlio.load_objects(['-'])[0][0]['metadata']['name']))\n",
                      "kind: Pod\nmetadata: {name: caf\u00e9}\n".encode("utf-8"))
    assert done.stdout.decode() == "'caf\\xe9'\n", done.stderr


def test_a_text_stream_in_place_of_standard_input_is_read_as_text(monkeypatch):
    monkeypatch.setattr(sys, "stdin", io.StringIO("kind: Pod\nmetadata: {name: p}\n"))
    assert yamlio.load_objects(["-"]) == [({"kind": "Pod", "metadata": {"name": "p"}},
                                           "<stdin>")]


def test_crlf_line_ends_load_as_before(tmp_path):
    path = tmp_path / "p.yaml"
    path.write_bytes(b"kind: Pod\r\nmetadata:\r\n  name: p\r\n  annotations:\r\n"
                     b"    a: |\r\n      x\r\n      y\r\n")
    ((obj, _),) = yamlio.load_objects([str(path)])
    assert obj["metadata"]["annotations"]["a"] == "x\ny\n"


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@settings(max_examples=300, deadline=None)
@given(before=_text, bad=st.sampled_from([b"\xff", b"\xc0\xaf", b"\xed\xa0\x80", b"\x80",
                                          b"\xf0\x9f"]), after=_text)
def test_the_position_is_that_of_the_first_bad_byte(before, bad, after):
    data = before.encode("utf-8") + bad + after.encode("utf-8")
    with pytest.raises(InputError) as e:
        yamlio.utf8_text(data, "f")
    offset = len(before.encode("utf-8"))
    line = before.count("\n") + 1
    column = len(before) - (before.rfind("\n") + 1) + 1
    assert e.value.source == "f"
    assert e.value.message.startswith("not UTF-8 text: byte 0x%02x at line %d, column %d "
                                      "(byte offset %d): " % (bad[0], line, column, offset))
