"""Turn a compute host name into a valid Kubernetes label value, deterministically.

Rule (documented in doc/mgmt-driver.md):
* a value that is already valid (at most 63 characters, empty or alphanumeric
  at both ends with ``-``, ``_``, ``.`` inside) is kept as it is;
* otherwise every run of other characters becomes ``-``, non-alphanumeric
  characters are stripped from both ends, the result is cut to 54 characters
  (and stripped again), and ``-`` plus the first 8 hex digits of the SHA-256 of
  the *original* name are appended. Two different host names therefore never
  share a label value (up to a 32-bit hash collision), and the same host
  always gets the same value.
"""
import hashlib
import re

from tacker_hwaffinity.objects.validation import label_value_error

_INVALID_RUN = re.compile(r"[^A-Za-z0-9_.-]+")
_EDGE = re.compile(r"^[^A-Za-z0-9]+|[^A-Za-z0-9]+$")
MAX_LEN = 63
_HASH_LEN = 8
_KEEP = MAX_LEN - _HASH_LEN - 1


def label_value(name: str) -> str:
    """A valid label value for host NAME (see the module rule)."""
    if label_value_error(name) is None:
        return name
    digest = hashlib.sha256(name.encode("utf-8")).hexdigest()[:_HASH_LEN]
    cleaned = _EDGE.sub("", _INVALID_RUN.sub("-", name))
    cleaned = _EDGE.sub("", cleaned[:_KEEP])
    return "%s-%s" % (cleaned, digest) if cleaned else digest
