"""How deeply a JSON text nests, measured before anyone decodes it.

Python's ``json`` decoder recurses once per ``[``/``{``: a body of a few thousand
brackets raises ``RecursionError`` (out of a request thread), and every walker of
the decoded object after it recurses as deeply. Kubernetes objects nest about 20
levels (an AdmissionReview of a pod with its managedFields); :data:`MAX_DEPTH`
leaves room for any real one. The check skips strings (their brackets are text),
costs two ``bytes.count`` calls for a body with fewer brackets than the limit, and
stays linear in C for any other: a pod with its managedFields (every extender
request from kube-scheduler) takes about 60 us at 7 KB. The server checks a body
before its handler, which checks again for its other callers: the answer for the
last small body is remembered, so that a body is scanned once.
"""
import re

MAX_DEPTH = 64

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_ESCAPE = re.compile(rb"\\.", re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_CHUNK = 1 << 20
_SMALL = 1 << 16        # bodies up to this size: strings cut out by splitting at quotes
_last = (None, None, None)      # (the last small body, its limit, its answer)


def nesting(body, limit=MAX_DEPTH):
    """The nesting depth of the JSON text BODY (bytes) when it is above LIMIT,
    else None. Brackets that do not balance are not this function's business:
    the decoder reports them."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return None
    global _last
    last, last_limit, answer = _last
    if last is body and last_limit == limit:
        return answer
    if len(body) > _SMALL:
        return _deepest(_STRING.sub(b"", body).translate(None, _NOT_BRACKETS), limit)
    # with every escape pair gone, each quote left opens or closes a string; a split
    # in C beats the string pattern's matching three times over on a pod's JSON
    text = _ESCAPE.sub(b"", body) if b"\\" in body else body
    answer = _deepest(b"".join(text.split(b'"')[0::2]).translate(None, _NOT_BRACKETS), limit)
    _last = (body, limit, answer)
    return answer


def _deepest(brackets, limit):
    """The deepest level of BRACKETS (only the four bracket bytes) above LIMIT, or None."""
    if brackets.count(b"[") + brackets.count(b"{") <= limit:
        return None
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
