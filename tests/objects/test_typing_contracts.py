"""What the type names of objects/ promise holds at run time too: the JSON aliases work in
annotations that Python evaluates (3.10 has no lazy annotations), and TextChunks is the
file object its annotation says it is."""
import typing

from tacker_hwaffinity.objects.jsontypes import JsonObject, JsonValue, ReadOnlyJson
from tacker_hwaffinity.objects.yaml_strict import TextChunks


def test_the_json_aliases_combine_in_evaluated_annotations():
    def handler(value: JsonValue | None, obj: JsonObject, view: ReadOnlyJson) -> JsonValue:
        return value

    hints = typing.get_type_hints(handler)
    assert type(None) in typing.get_args(hints["value"])
    assert hints["obj"] == dict[str, typing.Any]


def test_text_chunks_reads_the_rest_when_no_size_is_given():
    chunks = TextChunks("kind: Pod\n")
    assert chunks.read(4) == "kind"
    assert chunks.read() == ": Pod\n"
    assert chunks.read(8) == ""
