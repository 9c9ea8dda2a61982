"""The leader elector's checks that need no API server: the durations client-go
accepts, and MicroTime strings (the Lease behaviour itself runs against the
real kube-apiserver in tests/controlplane/test_kube_leader.py)."""
import datetime
import re

import pytest

from tacker_hwaffinity.kube.leader import LeaderElector, micro_time, validate_durations

MICRO = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
UTC = datetime.timezone.utc


@pytest.mark.parametrize("durations", [(15, 10, 2), (60, 15, 5), (3, 2, 0.5), (1.0, 0.7, 0.5)])
def test_durations_client_go_accepts(durations):
    validate_durations(*durations)
    elector = LeaderElector(object(), "ns", "lease", "me", *durations)
    assert not elector.is_leader.is_set()


@pytest.mark.parametrize("durations, words", [
    ((10, 10, 2), "lease_duration"),          # equal is not greater
    ((5, 10, 2), "lease_duration"),
    ((15, 2.4, 2), "1.2 x retry_period"),     # 2.4 is not greater than 1.2 x 2
    ((15, 2, 2), "1.2 x retry_period"),
    ((15, 10, 0), "retry_period"),
    ((15, 10, -1), "retry_period"),
])
def test_durations_client_go_rejects(durations, words):
    with pytest.raises(ValueError, match=re.escape(words)):
        validate_durations(*durations)
    with pytest.raises(ValueError):
        LeaderElector(object(), "ns", "lease", "me", *durations)


def test_an_empty_identity_or_lease_name_is_rejected():
    with pytest.raises(ValueError, match="identity"):
        LeaderElector(object(), "ns", "lease", "")
    with pytest.raises(ValueError, match="namespace and a name"):
        LeaderElector(object(), "ns", "", "me")


def test_micro_time_has_six_digits_even_at_a_whole_second():
    whole = datetime.datetime(2026, 1, 2, 3, 4, 5, 0, tzinfo=UTC)
    assert micro_time(whole) == "2026-01-02T03:04:05.000000Z"
    assert whole.isoformat() == "2026-01-02T03:04:05+00:00"     # what the client would send
    assert micro_time(whole.replace(microsecond=7)) == "2026-01-02T03:04:05.000007Z"
    assert micro_time(whole.replace(microsecond=999999)) == "2026-01-02T03:04:05.999999Z"


def test_micro_time_is_utc_whatever_the_zone():
    tokyo = datetime.timezone(datetime.timedelta(hours=9))
    assert micro_time(datetime.datetime(2026, 1, 2, 9, 0, 0, 120000, tzinfo=tokyo)) == \
        "2026-01-02T00:00:00.120000Z"
    # a naive datetime is taken as UTC, not as local time
    assert micro_time(datetime.datetime(2026, 1, 2, 9, 0, 0)) == "2026-01-02T09:00:00.000000Z"


def test_micro_time_now():
    before = datetime.datetime.now(UTC).replace(microsecond=0)
    text = micro_time()
    assert MICRO.match(text), text
    parsed = datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=UTC)
    assert before <= parsed <= datetime.datetime.now(UTC)
