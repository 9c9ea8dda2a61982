"""The story's cascade guard (``lcm.settle_left``, run by conftest's ``_no_cascade``
after a failed step), over a scripted tackerclient: what it waits for, rolls back and
marks FAILED, as SOL003 allows each operation."""
from . import lcm


class ScriptedTacker:
    """Occurrences whose next states are scripted per request: showing one advances it."""

    def __init__(self, occs, rollback_ends="ROLLED_BACK"):
        self.occs = {o["id"]: dict(o) for o in occs}
        self.next = {o["id"]: list(o.pop("then", ())) for o in occs}
        self.rollback_ends, self.requests = rollback_ends, []

    def list_vnf_lcm_op_occs(self):
        return [dict(o) for o in self.occs.values()]

    def show_vnf_lcm_op_occs(self, occ_id):
        if self.next[occ_id]:
            self.occs[occ_id]["operationState"] = self.next[occ_id].pop(0)
        return dict(self.occs[occ_id])

    def rollback_vnf_instance(self, occ_id):
        self.requests.append(("rollback", occ_id))
        self.next[occ_id] = ["ROLLING_BACK", self.rollback_ends]

    def fail_vnf_instance(self, occ_id):
        self.requests.append(("fail", occ_id))
        self.next[occ_id] = ["FAILED"]


def _occ(occ_id, operation, state, then=()):
    return {"id": occ_id, "operation": operation, "operationState": state,
            "vnfInstanceId": "vnf-" + occ_id, "then": list(then)}


def test_a_running_one_is_waited_for_and_failed_temp_ones_are_resolved_as_allowed():
    tacker = ScriptedTacker([
        _occ("a", "HEAL", "PROCESSING", ["PROCESSING", "COMPLETED"]),
        _occ("b", "SCALE", "FAILED_TEMP"),
        _occ("c", "HEAL", "FAILED_TEMP"),
        _occ("d", "TERMINATE", "COMPLETED"),
    ])
    lines = lcm.settle_left(tacker, timeout=30)
    assert tacker.requests == [("rollback", "b"), ("fail", "c")]
    assert lines == ["SCALE b of instance vnf-b: rolled back (ROLLED_BACK)",
                     "HEAL c of instance vnf-c: marked FAILED"]
    assert {o["id"]: o["operationState"] for o in tacker.list_vnf_lcm_op_occs()} == {
        "a": "COMPLETED", "b": "ROLLED_BACK", "c": "FAILED", "d": "COMPLETED"}


def test_a_rollback_that_fails_again_is_marked_failed():
    tacker = ScriptedTacker([_occ("i", "INSTANTIATE", "FAILED_TEMP")],
                            rollback_ends="FAILED_TEMP")
    lines = lcm.settle_left(tacker, timeout=2)
    assert tacker.requests == [("rollback", "i"), ("fail", "i")]
    assert lines[0].startswith("INSTANTIATE i of instance vnf-i: the rollback did not end")
    assert lines[1] == "INSTANTIATE i of instance vnf-i: marked FAILED"


def test_nothing_left_means_nothing_done():
    tacker = ScriptedTacker([_occ("x", "SCALE", "COMPLETED"), _occ("y", "HEAL", "FAILED")])
    assert lcm.settle_left(tacker) == [] and tacker.requests == []
