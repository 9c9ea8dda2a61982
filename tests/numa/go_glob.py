"""The line-by-line transcription of Go's ``path/filepath.Match`` that ``numa.glob``
was before it compiled patterns: the reference its compiled matcher is checked
against (tests/numa/test_glob.py)."""
from tacker_hwaffinity.numa.glob import BadPattern


def match(pattern, name):
    """True if NAME matches PATTERN; a malformed pattern never matches."""
    try:
        return match_strict(pattern, name)
    except BadPattern:
        return False


def match_strict(pattern, name):
    """Like :func:`match` but raise :class:`BadPattern` where Go returns an error."""
    while pattern:
        star, chunk, pattern = _scan_chunk(pattern)
        if star and not chunk:
            # A trailing star matches the rest of the name unless it has a '/'.
            return "/" not in name
        rest, ok = _match_chunk(chunk, name)
        if ok and (not rest or pattern):
            name = rest
            continue
        if star:
            found = False
            i = 0
            while i < len(name) and name[i] != "/":
                rest, ok = _match_chunk(chunk, name[i + 1:])
                if ok:
                    if not pattern and rest:
                        i += 1
                        continue
                    name = rest
                    found = True
                    break
                i += 1
            if found:
                continue
        # No match: the rest of the pattern must still be well formed.
        while pattern:
            _, chunk, pattern = _scan_chunk(pattern)
            _match_chunk(chunk, "")
        return False
    return not name


def _scan_chunk(pattern):
    star = False
    while pattern and pattern[0] == "*":
        pattern = pattern[1:]
        star = True
    in_range = False
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            if i + 1 < len(pattern):
                i += 1
        elif c == "[":
            in_range = True
        elif c == "]":
            in_range = False
        elif c == "*" and not in_range:
            break
        i += 1
    return star, pattern[:i], pattern[i:]


def _match_chunk(chunk, s):
    """Match CHUNK at the start of S: return (rest of S, matched)."""
    failed = False
    while chunk:
        if not failed and not s:
            failed = True
        c = chunk[0]
        if c == "[":
            r = None
            if not failed:
                r, s = s[0], s[1:]
            chunk, matched = _match_class(chunk[1:], r)
            if not matched:
                failed = True
        elif c == "?":
            if not failed:
                if s[0] == "/":
                    failed = True
                s = s[1:]
            chunk = chunk[1:]
        else:
            if c == "\\":
                chunk = chunk[1:]
                if not chunk:
                    raise BadPattern("trailing backslash")
            if not failed:
                if chunk[0] != s[0]:
                    failed = True
                s = s[1:]
            chunk = chunk[1:]
    if failed:
        return "", False
    return s, True


def _match_class(chunk, r):
    """Match character R (None once the chunk has failed) against the character class
    that starts CHUNK, just after its '[': return (rest of CHUNK, matched)."""
    negated = False
    if chunk and chunk[0] == "^":
        negated = True
        chunk = chunk[1:]
    matched = False
    nrange = 0
    while True:
        if chunk and chunk[0] == "]" and nrange > 0:
            chunk = chunk[1:]
            break
        lo, chunk = _get_esc(chunk)
        hi = lo
        if chunk[0] == "-":
            hi, chunk = _get_esc(chunk[1:])
        if r is not None and lo <= r <= hi:
            matched = True
        nrange += 1
    return chunk, matched != negated


def _get_esc(chunk):
    if not chunk or chunk[0] in "-]":
        raise BadPattern("bad character class")
    if chunk[0] == "\\":
        chunk = chunk[1:]
        if not chunk:
            raise BadPattern("trailing backslash in class")
    r, rest = chunk[0], chunk[1:]
    if not rest:
        raise BadPattern("unterminated character class")
    return r, rest
