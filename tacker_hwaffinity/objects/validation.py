"""Kubernetes name and label validation (apimachinery's validation rules)."""
import re
from typing import Any

_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$")
_DNS1123_SUBDOMAIN = re.compile(
    r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


def qualified_name_error(key: Any) -> str | None:
    """Why KEY is not a valid qualified name (label key), or None."""
    if not isinstance(key, str):
        return "must be a string"
    if "/" in key:
        prefix, _, name = key.partition("/")
        if "/" in name:
            return ("a qualified name must consist of an optional DNS subdomain "
                    "prefix and a name separated by one '/'")
        if not prefix:
            return "prefix part must be non-empty"
        if len(prefix) > 253 or not _DNS1123_SUBDOMAIN.match(prefix):
            return ("prefix part must be a lowercase RFC 1123 subdomain of at most "
                    "253 characters")
    else:
        name = key
    if not name:
        return "name part must be non-empty"
    if len(name) > 63:
        return "name part must be no more than 63 characters"
    if not _QUALIFIED_NAME.match(name):
        return ("name part must consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character")
    return None


def label_value_error(value: Any) -> str | None:
    """Why VALUE is not a valid label value, or None."""
    if not isinstance(value, str):
        return "must be a string"
    if value == "":
        return None
    if len(value) > 63:
        return "must be no more than 63 characters"
    if not _QUALIFIED_NAME.match(value):
        return ("must be empty or consist of alphanumeric characters, '-', '_' or '.', "
                "and must start and end with an alphanumeric character")
    return None

