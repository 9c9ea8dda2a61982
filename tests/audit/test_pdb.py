import pytest

from tacker_hwaffinity.audit.pdb import Budget, scaled
from tacker_hwaffinity.errors import InputError

from tests.audit.helpers import pdb

SEL = {"matchLabels": {"app": "a"}}


@pytest.mark.parametrize("value,total,want", [
    (2, 10, 2), ("50%", 3, 2), ("50%", 4, 2), ("1%", 1, 1), ("0%", 5, 0), ("100%", 3, 3),
    ("34%", 3, 2), ("33%", 3, 1)])
def test_scaled_rounds_up(value, total, want):
    assert scaled(value, total, "f") == want


@pytest.mark.parametrize("value", ["50", "-1%", "x%", 1.5, True, -1])
def test_scaled_rejects(value):
    with pytest.raises(InputError):
        scaled(value, 4, "spec.minAvailable")


@pytest.mark.parametrize("spec,scale,want", [
    ({"min_available": 2}, 5, 2),
    ({"min_available": "50%"}, 3, 2),            # ceil(1.5)
    ({"max_unavailable": 1}, 3, 2),
    ({"max_unavailable": "50%"}, 3, 1),          # 3 - ceil(1.5)
    ({"max_unavailable": "100%"}, 3, 0),
    ({"max_unavailable": 5}, 3, 0),              # never below 0
    ({}, 4, 1),                                   # neither: minAvailable 1
])
def test_desired_healthy(spec, scale, want):
    assert Budget(pdb("b", SEL, **spec)).desired_healthy(scale, scale) == want


def test_after_loss_holds_at_the_edge():
    b = Budget(pdb("b", SEL, max_unavailable="50%"))   # 4 -> 2 healthy needed
    assert b.after_loss(4, 4, 2)["holds"] is True
    assert b.after_loss(4, 4, 3)["holds"] is False


def test_both_set_is_bad_input():
    with pytest.raises(InputError, match="both set"):
        Budget(pdb("b", SEL, min_available=1, max_unavailable=1))


def test_bad_percent_names_field():
    with pytest.raises(InputError, match="PodDisruptionBudget default/b: field "
                                         "spec.maxUnavailable"):
        Budget(pdb("b", SEL, max_unavailable="half"))
