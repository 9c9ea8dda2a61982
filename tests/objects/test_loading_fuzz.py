"""Fuzzing the loaders (hypothesis): any input gives a result or an InputError, nothing else."""
import json
import os
import tempfile

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import yaml_events, yaml_strict, yamlio
from tacker_hwaffinity.scheduling.snapshot import SNAPSHOT_FIELDS

from .loader_backends import BACKENDS, backend

KEYS = st.sampled_from(["kind", "metadata", "status", "spec", "name", "items", "images",
                        "managedFields", "phase", "labels", "a", "<<", "1", "yes", ""])
SCALARS = (st.none() | st.booleans() | st.integers() | st.text(max_size=8)
           | st.floats(allow_nan=False) | st.sampled_from(["Node", "Pod", "List", "NodeList"]))
JSONISH = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(KEYS, inner, max_size=5), max_leaves=25)
OBJECTS = st.builds(lambda kind, body: dict(body, kind=kind) if isinstance(body, dict) else body,
                    st.sampled_from(["Node", "Pod", "List", "Namespace", "Deployment"]), JSONISH)


def outcome(text, keep=None):
    """The loader's result, or the InputError message (which must be one line)."""
    try:
        return yamlio.parse_documents(text, "f", keep)
    except InputError as e:
        message = str(e)
        assert message.startswith("f: ") and "\n" not in message
        return message


@pytest.mark.parametrize("name", BACKENDS)
@settings(max_examples=150, deadline=None)
@given(st.binary(max_size=120))
def test_any_bytes_in_a_file(name, data):
    fd, path = tempfile.mkstemp()
    try:
        os.write(fd, data)
        os.close(fd)
        with backend(name):
            try:
                assert isinstance(yamlio.load_objects([path], keep=SNAPSHOT_FIELDS), list)
            except InputError as e:
                assert str(e).startswith(path) and "\n" not in str(e)
    finally:
        os.unlink(path)


@pytest.mark.parametrize("name", BACKENDS)
@settings(max_examples=250, deadline=None)
@given(st.text(alphabet=st.sampled_from('{}[],:"\' \n-#&*!|>%@`?\\atrue0.5e\t\x00\x85'),
               max_size=60) | st.text(max_size=60))
def test_any_text(name, text):
    with backend(name):
        outcome(text)
        outcome(text, SNAPSHOT_FIELDS)


def _mutations(text, data):
    """TEXT itself, cut short, with a character replaced, or with a key given twice."""
    which = data.draw(st.sampled_from(["same", "cut", "replace", "duplicate"]))
    if which == "cut" and text:
        return text[:data.draw(st.integers(0, len(text) - 1))]
    if which == "replace" and text:
        i = data.draw(st.integers(0, len(text) - 1))
        return text[:i] + data.draw(st.sampled_from('{}[],:" x\n')) + text[i + 1:]
    if which == "duplicate" and '": ' in text:
        i = text.index('": ')
        start = text.rindex('"', 0, i)
        return text[:start] + text[start:i + 3] + '0, ' + text[start:]
    return text


@pytest.mark.parametrize("name", BACKENDS)
@settings(max_examples=200, deadline=None)
@given(OBJECTS, st.sampled_from(["json", "json-indent", "yaml", "yaml-flow"]), st.data())
def test_json_like_structures(name, obj, style, data):
    text = {"json": lambda: json.dumps(obj),
            "json-indent": lambda: json.dumps(obj, indent=4),
            "yaml": lambda: yaml.safe_dump(obj),
            "yaml-flow": lambda: yaml.safe_dump(obj, default_flow_style=True)}[style]()
    mutated = _mutations(text, data)
    with backend(name):
        got = outcome(mutated)
        pruned = outcome(mutated, SNAPSHOT_FIELDS)
    if isinstance(got, str):
        assert got == pruned  # dropping fields changes no error
    if mutated == text and isinstance(obj, dict) and "Infinity" not in text:
        try:  # valid and unmutated: read exactly (JSON's Infinity is read as YAML reads it)
            expected = yamlio._expand_list(obj, "f", None)
        except InputError as e:
            expected = str(e)
        assert got == expected


@pytest.mark.parametrize("name", BACKENDS)
@settings(max_examples=150, deadline=None)
@given(JSONISH, st.booleans())
def test_fast_path_reads_what_the_strict_loader_reads(name, value, flow):
    text = yaml.safe_dump(value, default_flow_style=flow)
    with backend(name):
        try:
            fast = yaml_events.load_all(text)
        except yaml_events.NeedsFullLoader:
            fast = None  # handed over: nothing to compare
        assert yaml_strict.load_all(text) == [value]
        assert fast is None or fast == [value]
