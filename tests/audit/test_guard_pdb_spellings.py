"""A PodDisruptionBudget is read by what its percent means, as the API server reads it
(apimachinery's IsValidPercent, ``[0-9]+%``: "050%" is 50%), so the rebalance's budget
guard holds for every spelling the API server stores, and refuses what it refuses."""
import pytest
from hypothesis import given, strategies as st

from tacker_hwaffinity.audit import rebalance
from tacker_hwaffinity.audit.pdb import Budget, scaled
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling.profile import Profile
from tests.audit.helpers import anti, node, pdb, pod

NODES = [node("w1", "h1"), node("w2", "h1"), node("w3", "h2"), node("w4", "h3")]


@given(st.integers(0, 100), st.integers(1, 4), st.integers(0, 1000))
def test_a_percent_with_leading_zeros_means_what_it_says(percent, zeros, total):
    spelt = "0" * zeros + "%d%%" % percent
    assert scaled(spelt, total, "f") == scaled("%d%%" % percent, total, "f")


def _replicas():
    out = []
    for i, (on, created) in enumerate((("w1", "2026-01-01T00:00:00Z"),
                                       ("w2", "2026-01-02T00:00:00Z"))):
        p = pod("web-abc-%d" % i, on, {"app": "web"}, ("ReplicaSet", "web-abc"),
                affinity=anti("web"))
        p["metadata"].update(creationTimestamp=created, uid="uid-%d" % i)
        out.append(p)
    return out


@pytest.mark.parametrize("field,value", [("max_unavailable", "00%"),
                                         ("max_unavailable", "000%"),
                                         ("min_available", "0100%")])
def test_a_budget_spelt_with_leading_zeros_still_holds_the_workload(field, value):
    """The budget allows no disruption however its percent is spelt: nothing is evicted
    (a budget taken as malformed would protect nothing)."""
    budget = pdb("web", {"matchLabels": {"app": "web"}}, **{field: value})
    r = rebalance.plan(NODES, _replicas(), "CIS-node", Profile().framework(), limit=1,
                       pdbs=[budget])
    assert r.evictions == []
    (held,) = r.held
    assert held.reason.startswith("PodDisruptionBudget default/web: 2 healthy, 2 required")


@pytest.mark.parametrize("value", ["50%\n", "101%", "1000%", "9" * 5000 + "%", "+5%"])
def test_percents_the_api_server_refuses_are_refused(value):
    with pytest.raises(InputError, match="field spec.maxUnavailable"):
        Budget(pdb("b", {}, max_unavailable=value))
