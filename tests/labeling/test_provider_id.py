"""A node's spec.providerID: OCCM's two forms name a Nova server, anything else none;
any text gives a ProviderID or None, never an exception, within the fuzz bounds."""
import pytest
from hypothesis import example, given
from hypothesis import strategies as st

import fuzzing
from tacker_hwaffinity.labeling import provider_id
from tacker_hwaffinity.labeling.provider_id import ProviderID

SID = "1986d674-fc41-4576-9199-9e160781e96e"


@pytest.mark.parametrize("value, expected", [
    ("openstack:///" + SID, ProviderID(SID, None)),
    ("openstack://RegionOne/" + SID, ProviderID(SID, "RegionOne")),
    ("openstack:///" + SID.upper(), ProviderID(SID, None)),     # Nova's ids are lower case
], ids=["no-region", "region", "upper-case"])
def test_both_occm_forms_name_the_server(value, expected):
    assert provider_id.parse(value) == expected
    assert provider_id.parse(provider_id.text(expected)) == expected


@pytest.mark.parametrize("value", [
    None, 42, "", "openstack://", "openstack:///", "openstack:///not-a-uuid",
    "aws:///us-east-1a/i-0abc123def456789", "kind://docker/kind/kind-worker",
    "gce://project/zone/vm", "openstack:///%s/extra" % SID, "openstack://a/b/" + SID,
    "openstack:///%s\n" % SID, " openstack:///" + SID, "OPENSTACK:///" + SID,
    "/" + SID, SID, "openstack://" + "r" * 400 + "/" + SID,
    "openstack:///" + SID + "0" * 10 ** 6,
], ids=lambda v: repr(v)[:30])
def test_any_other_value_names_no_server(value):
    assert provider_id.parse(value) is None


@given(st.one_of(st.text(max_size=400), st.binary(max_size=64), st.none(), st.integers(),
                 st.builds(lambda r, tail: "openstack://%s/%s%s" % (r, SID, tail),
                           st.text(max_size=20), st.text(max_size=5))))
@example("openstack://" + "x" * 10 ** 6 + "/" + SID)
def test_fuzz_parse_gives_none_or_a_uuid(value):
    got = fuzzing.bounded(provider_id.parse, value)
    assert got is None or (len(got.server_id) == 36 and got.server_id == got.server_id.lower()
                           and "/" not in (got.region or ""))
