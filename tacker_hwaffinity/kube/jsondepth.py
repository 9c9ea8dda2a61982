"""How deeply a JSON text nests, measured before anyone decodes it.

Python's ``json`` decoder recurses once per ``[``/``{``: a body of a few thousand
brackets raises ``RecursionError`` (out of a request thread), and every walker of
the decoded object after it recurses as deeply. Kubernetes objects nest about 20
levels (an AdmissionReview of a pod with its managedFields); :data:`MAX_DEPTH`
leaves room for any real one. The check skips strings (their brackets are text),
costs two ``bytes.count`` calls for a body with fewer brackets than the limit
(every extender request: one pod and a list of names), and stays linear in C for
any other.
"""
import re

MAX_DEPTH = 64

_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.S)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")
_CHUNK = 1 << 20


def nesting(body, limit=MAX_DEPTH):
    """The nesting depth of the JSON text BODY (bytes) when it is above LIMIT,
    else None. Brackets that do not balance are not this function's business:
    the decoder reports them."""
    if body.count(b"[") + body.count(b"{") <= limit:
        return None
    import numpy as np
    steps = np.zeros(256, np.int32)
    steps[list(b"[{")] = 1
    steps[list(b"]}")] = -1
    brackets = _STRING.sub(b"", body).translate(None, _NOT_BRACKETS)
    depth = deepest = 0
    for start in range(0, len(brackets), _CHUNK):
        level = np.cumsum(steps[np.frombuffer(brackets[start:start + _CHUNK], np.uint8)],
                          dtype=np.int32) + depth
        deepest = max(deepest, int(level.max()))
        depth = int(level[-1])
    return deepest if deepest > limit else None
