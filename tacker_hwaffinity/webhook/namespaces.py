"""What the admission guard takes as "all namespaces": a ``namespaceSelector`` judged by
what it selects (the selector engine decides), not by how it is spelt.

The meaning: a selector spans all namespaces when it selects every namespace that anyone
may create, today or later, under a name it does not list, carrying no label but the
``kubernetes.io/metadata.name`` the API server gives every namespace. Such a selector
reaches all namespaces but those it excludes: ``{}`` is one spelling, and so are
``kubernetes.io/metadata.name Exists``, ``NotIn`` names (the pod's own included: all but
one namespace is no narrower a reach than all), ``DoesNotExist`` on any key but the
name's, ``NotIn`` on any other key, and any conjunction of those, in ``matchLabels`` or
``matchExpressions``, repeated or reordered. A selector that picks namespaces (``In`` or
``matchLabels`` on the name: namespaces its author named; ``Exists``/``In`` on another
label: namespaces someone labelled) does not span all namespaces, nor does one that
selects none (``DoesNotExist`` on the name). So ``metadata.name In`` every name there is
today is an enumeration, as ``namespaces: [...]`` is (seed ``001``'s "named
namespaces"): it does not reach the namespaces created after it.

Why one probe decides: a selector here has no Gt/Lt (refused in ``namespaceSelector``),
so each of its requirements, on a namespace that carries only its name label and whose
name is none of the values the selector lists for that label, has a verdict that does
not depend on that name (``In``: false; ``NotIn``: true; ``Exists``: true for the name
label only; ``DoesNotExist``: the opposite). The engine's verdict on one such namespace
is therefore its verdict on every one of them.
"""
from tacker_hwaffinity.scheduling.model import NS_NAME_LABEL
from tacker_hwaffinity.scheduling.selectors import LabelSelector

PROBE_PREFIX = "unlisted-namespace-"


def unlisted_name(selector: LabelSelector) -> str:
    """A namespace name (an RFC 1123 label) that SELECTOR (a parsed
    ``selectors.LabelSelector``) lists nowhere for ``kubernetes.io/metadata.name``."""
    listed = {v for r in selector.requirements if r.key == NS_NAME_LABEL for v in r.values}
    return next(name for name in (PROBE_PREFIX + str(i) for i in range(len(listed) + 1))
                if name not in listed)


def spans_all_namespaces(selector: LabelSelector) -> bool:
    """Does SELECTOR (a parsed ``selectors.LabelSelector`` without Gt/Lt) select every
    namespace but those it excludes, namespaces created later included (module doc)?"""
    return selector.matches({NS_NAME_LABEL: unlisted_name(selector)})
