"""Type names for Kubernetes objects as JSON data, shared by every package.

Which to use:

- ``JsonObject`` for a JSON object a function builds or changes (a patch body, a pod it
  fills in, the result of ``json.loads`` it goes on to edit): ``dict[str, Any]``.
- ``ReadOnlyJson`` for a JSON object a function only reads (a pod, a node, a
  NodeHardwareProfile handed in by a caller): ``Mapping[str, Any]``, so a caller may pass
  any mapping and the type checker refuses writes through it.
- ``JsonList`` for a JSON array a function builds (``list[Any]``).
- ``JsonValue`` for any JSON value whose kind is not known yet (what ``json.loads`` or a
  YAML load returns before a check narrows it).

Values inside the objects stay ``Any``: the objects' structure is open (Kubernetes adds
fields), and the code narrows with ``.get`` and ``isinstance`` where it needs a kind.
Annotations only: nothing here runs a check.
"""
from collections.abc import Callable, Mapping
from typing import Any, TypeAlias, Union

# Union with quoted names (not PEP 604 in a string): the alias then works at run time in
# annotations such as ``JsonValue | None`` on Python 3.10.
JsonValue: TypeAlias = Union[str, int, float, bool, None, list["JsonValue"], dict[str, "JsonValue"]]
JsonObject: TypeAlias = dict[str, Any]
JsonList: TypeAlias = list[Any]
ReadOnlyJson: TypeAlias = Mapping[str, Any]

# What the loaders call on every mapping once it is complete (``pruning`` makes them):
# it may delete fields in place.
Pruner: TypeAlias = Callable[[JsonObject], None]
