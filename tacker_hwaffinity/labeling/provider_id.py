"""A node's ``spec.providerID`` as openstack-cloud-controller-manager writes it.

OCCM (``pkg/openstack/utils.go``, ``instanceIDFromProviderID``) writes
``openstack:///<server id>`` and, with ``OS_CCM_REGIONAL``,
``openstack://<region>/<server id>``: the regular expression
``^openstack://([^/]*)/([^/]+)$``. Only these two forms name a Nova server here; any
other scheme (``aws://``, ``kind://``, ...) or shape names none, and the node is
matched by its InternalIP instead (``labeling.plan.node_of``).
"""
import re
import typing

SCHEME = "openstack://"
# A node object comes from the cluster: longer values are not looked at (a region
# name and a server UUID are far shorter).
MAX_LENGTH = 300
# Nova server ids are UUIDs; a region is a Keystone region id (no slash, no space).
_FORM = re.compile(r"openstack://([A-Za-z0-9._:-]{0,255})/"
                   r"([0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-"
                   r"[0-9a-fA-F]{12})")


class ProviderID(typing.NamedTuple):
    """The Nova server a providerID names, and its region (None: not given)."""

    server_id: str
    region: typing.Optional[str]


def parse(value: typing.Any) -> typing.Optional[ProviderID]:
    """The ProviderID that VALUE (a node's spec.providerID, any type) names, or None
    when it is not one of OCCM's two forms."""
    if not isinstance(value, str) or len(value) > MAX_LENGTH:
        return None
    m = _FORM.fullmatch(value)
    if m is None:
        return None
    return ProviderID(m.group(2).lower(), m.group(1) or None)


def text(pid: ProviderID) -> str:
    """The providerID of PID in OCCM's form (for messages)."""
    return "%s%s/%s" % (SCHEME, pid.region or "", pid.server_id)
