"""How deeply a JSON text nests, measured before anyone decodes it.

Python's ``json`` decoder recurses once per ``[``/``{``: a body of a few thousand
brackets raises ``RecursionError`` (out of a request thread), and every walker of
the decoded object after it recurses as deeply. Kubernetes objects nest about 20
levels (an AdmissionReview of a pod with its managedFields); :data:`MAX_DEPTH`
leaves room for any real one. The check skips strings (their brackets are text),
costs two ``bytes.count`` calls for a body with fewer brackets than the limit, and
stays in C for any other: a pod with its managedFields (every extender request
from kube-scheduler) takes about 35 us at 12 KB. The server checks a body
before its handler, which checks again for its other callers: the answer for the
last small body is remembered, so that a body is scanned once (and the extender's
second request for a pod, the same bytes, not at all).
"""
import re

MAX_DEPTH = 64

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_ESCAPE = re.compile(rb"\\.", re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_NOT_MARKS = bytes(b for b in range(256) if b not in b'"[]{}')
_SQUARE = bytes.maketrans(b"{}", b"[]")
_CHUNK = 1 << 20
_SMALL = 1 << 16        # bodies up to this size: strings cut out by splitting at quotes
# (the last small body, its limit, its answer)
_last: tuple[bytes | None, int | None, int | None] = (None, None, None)


def nesting(body: bytes, limit: int = MAX_DEPTH) -> int | None:
    """The nesting depth of the JSON text BODY (bytes) when it is above LIMIT,
    else None. Brackets that do not balance are not this function's business:
    the decoder reports them."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return None
    global _last
    last, last_limit, answer = _last
    if last_limit == limit and (last is body or last == body):
        return answer
    if len(body) > _SMALL:
        return _deepest(_STRING.sub(b"", body).translate(None, _NOT_BRACKETS), limit)
    # with every escape pair gone, each quote left opens or closes a string. Of the
    # text, only quotes and brackets matter; two quotes side by side go (a string
    # without brackets, or one's end and the next one's start: either way no bracket
    # changes sides), so that the split at quotes cuts out only the few strings that
    # hold brackets: 35 us for a pod with its managedFields, a third of a split of
    # every string
    text = _ESCAPE.sub(b"", body) if b"\\" in body else body
    marks = text.translate(None, _NOT_MARKS).replace(b'""', b"")
    answer = _deepest(b"".join(marks.split(b'"')[0::2]), limit)
    _last = (body, limit, answer)
    return answer


def _deepest(brackets: bytes, limit: int) -> int | None:
    """The deepest level of BRACKETS (only the four bracket bytes) above LIMIT, or None.
    Innermost pairs are peeled a level at a time: brackets that balance and nest at
    most LIMIT deep are gone after LIMIT peels. Anything else is measured exactly."""
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return None
    level = brackets.translate(_SQUARE)
    for _ in range(limit):
        peeled = level.replace(b"[]", b"")
        if not peeled:
            return None
        if len(peeled) == len(level):
            break                   # what is left does not balance
        level = peeled
    return _exact(brackets, limit)


def _exact(brackets: bytes, limit: int) -> int | None:
    """The deepest level of BRACKETS above LIMIT, or None, by a running sum."""
    import numpy as np
    steps = np.zeros(256, np.int32)
    steps[list(b"[{")] = 1
    steps[list(b"]}")] = -1
    depth = deepest = 0
    for start in range(0, len(brackets), _CHUNK):
        level = np.cumsum(steps[np.frombuffer(brackets[start:start + _CHUNK], np.uint8)],
                          dtype=np.int32) + depth
        deepest = max(deepest, int(level.max()))
        depth = int(level[-1])
    return deepest if deepest > limit else None
