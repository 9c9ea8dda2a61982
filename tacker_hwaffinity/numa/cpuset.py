"""Linux CPU/node list syntax: ``0-3,8,10-11`` (parse and format)."""
from collections.abc import Iterable
from typing import Any


def parse_list(text: Any) -> set[int]:
    """Parse a kernel list ('' is empty); raise ValueError on bad syntax."""
    if not isinstance(text, str):
        if isinstance(text, int) and not isinstance(text, bool) and text >= 0:
            return {text}
        if isinstance(text, list):
            out: set[int] = set()
            for item in text:
                out |= parse_list(item if isinstance(item, str) else item)
            return out
        raise ValueError("expected a list such as 0-3,8")
    out = set()
    text = text.strip()
    if not text:
        return out
    for item in text.split(","):
        item = item.strip()
        lo, sep, hi = item.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError("%r is not a CPU list item (expected N or A-B)" % item)
        lo = int(lo)
        hi = int(hi) if sep else lo
        if hi < lo:
            raise ValueError("%r: range end before start" % item)
        if hi - lo > 65536:
            raise ValueError("%r: range too large" % item)
        out.update(range(lo, hi + 1))
    return out


def format_list(ids: Iterable[int]) -> str:
    """Format ids as a kernel list: {0,1,2,5} -> '0-2,5'."""
    ids = sorted(set(ids))
    parts, i = [], 0
    while i < len(ids):
        j = i
        while j + 1 < len(ids) and ids[j + 1] == ids[j] + 1:
            j += 1
        parts.append(str(ids[i]) if i == j else "%d-%d" % (ids[i], ids[j]))
        i = j + 1
    return ",".join(parts)
