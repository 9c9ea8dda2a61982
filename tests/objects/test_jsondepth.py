"""objects.jsondepth: the depth of a JSON text, found before decoding, strings skipped."""
import json

from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.objects import jsondepth

# strings full of what could fool a scanner: brackets, quotes, backslashes, escapes
TEXT = st.text(alphabet=st.sampled_from('[]{}"\\/ab\u00e9\n'), max_size=8)
LEAVES = st.none() | st.booleans() | st.integers() | TEXT
VALUES = st.recursive(LEAVES, lambda inner: st.lists(inner, max_size=3)
                      | st.dictionaries(TEXT, inner, max_size=3), max_leaves=40)


def depth(value):
    if isinstance(value, list):
        return 1 + max(map(depth, value), default=0)
    if isinstance(value, dict):
        return 1 + max(map(depth, value.values()), default=0)
    return 0


def nested(value, levels):
    for i in range(levels):
        value = [value] if i % 2 else {"k[\"{": value}
    return value


@settings(max_examples=300, deadline=None)
@given(VALUES, st.integers(0, 90), st.integers(0, 6), st.booleans())
def test_the_depth_of_any_json_text_with_any_strings(value, levels, limit_step, large):
    value = nested(value, levels)
    text = json.dumps(value, ensure_ascii=False).encode()
    if large:                    # past the small-body path: the string pattern's
        text = text + b" " * (jsondepth._SMALL + 1 - len(text))
    limit = limit_step * 16
    want = depth(value)
    assert jsondepth.nesting(text, limit) == (want if want > limit else None)


def test_a_body_checked_twice_is_scanned_once(monkeypatch):
    text = json.dumps(nested(0, 100)).encode()
    assert jsondepth.nesting(text) == 100
    monkeypatch.setattr(jsondepth, "_deepest", None)     # a second scan would fail
    assert jsondepth.nesting(text) == 100
    monkeypatch.undo()
    assert jsondepth.nesting(text, 200) is None          # another limit: scanned again


def test_brackets_that_do_not_balance_are_measured_as_they_run():
    # peeling pairs stops short on these: the running sum decides
    assert jsondepth.nesting(b"[" * 100) == 100
    assert jsondepth.nesting(b"[]]" + b"[" * 70) == 69
    assert jsondepth.nesting(b"]" * 100 + b"[" * 70) is None    # the decoder refuses it
    assert jsondepth.nesting(b"[" * 60 + b"]" * 80) is None
    # many brackets, shallow: peeled in one pass
    assert jsondepth.nesting(b"[" + b"[]," * 100 + b"[]]") is None
    # exactly at the limit, and one past it
    assert jsondepth.nesting(b"[" * 64 + b"]" * 64) is None
    assert jsondepth.nesting(b"[" * 65 + b"]" * 65) == 65
