"""kube.evict's reading of a refusal: a 429's retryAfterSeconds and Retry-After, and odd
Status bodies, over a stand-in API (the real answers: tests/controlplane/test_kube_evict.py)."""
import datetime
import email.utils
import json

import pytest
from kubernetes.client.exceptions import ApiException

from tacker_hwaffinity.kube import evict
from tacker_hwaffinity.kube.client import Connection, KubeError

BUDGET = "Cannot evict pod as it would violate the pod's disruption budget."


class Core:
    def __init__(self, status, body, headers=None):
        self.error = ApiException(status=status, reason="refused")
        self.error.body = body if isinstance(body, (bytes, str)) else json.dumps(body)
        self.error.headers = headers

    def create_namespaced_pod_eviction(self, *args, **kwargs):
        raise self.error


def answer(status, body, headers=None):
    conn = Connection(None, "https://api.test")
    core = Core(status, body, headers)
    conn.core = lambda: core
    return evict.evict(conn, "ns", "web-1", uid="u1")


def status_429(**details):
    return {"kind": "Status", "code": 429, "message": BUDGET, "details": details}


@pytest.mark.parametrize("retry,headers,want", [
    (10, None, 10), ("5", None, 5), (" 7 ", None, 7), ("5s", None, None), (-3, None, None),
    (True, None, None), (2.5, None, 2), (None, {"Retry-After": "99999999999"}, 60),
    (None, {"Retry-After": "12"}, 12), (None, {"Retry-After": "soon"}, None),
    (None, {"Retry-After": "\u0661\u0662"}, None), (10 ** 30, None, 60), ("9" * 5000, None, 60),
    (None, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}, 0), ({"a": 1}, None, None),
    (None, ["not", "headers"], None),
])
def test_a_429s_retry_after_is_read_defensively_and_capped(retry, headers, want):
    details = {"causes": [{"reason": "DisruptionBudget", "message": "needs 2 healthy pods"}]}
    if retry is not None:
        details["retryAfterSeconds"] = retry
    got = answer(429, status_429(**details), headers)
    assert got == evict.Eviction("blocked", BUDGET + " needs 2 healthy pods", want)


def test_a_retry_after_date_in_the_future_is_seconds_from_now():
    soon = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=30)
    got = answer(429, status_429(), {"Retry-After": email.utils.format_datetime(soon, True)})
    assert 25 <= got.retry_after <= 30


@pytest.mark.parametrize("body", [
    {"kind": "Status", "message": BUDGET, "details": None},
    {"kind": "Status", "message": BUDGET, "details": ["x"]},
    {"kind": "Status", "message": BUDGET, "details": {"causes": {"a": 1}, "kind": 7}},
    {"kind": "Status", "message": BUDGET, "details": {"causes": ["x", None, {"message": 5}]}},
    {"kind": "Status", "message": ["x"], "details": "x"}, ["a list"], "not json", b"\xff",
])
def test_an_odd_status_body_is_still_a_decision_or_a_kube_error(body):
    got = answer(429, body)
    assert got.outcome == "blocked" and got.retry_after is None
    assert got.message in (BUDGET, "pod ns/web-1")
    with pytest.raises(KubeError):
        answer(403, body)                   # RBAC's 403, not a budget's
