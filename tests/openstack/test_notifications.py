"""Nova notifications as a prompt to poll: what is read of them and what is never logged.
(The listener itself runs against real Nova and RabbitMQ in test_controller_e2e.py.)"""
import logging

import pytest

from tacker_hwaffinity.openstack import notifications


@pytest.mark.parametrize("url,shown", [
    ("rabbit://guest:s3cret@127.0.0.1:5672/", "rabbit://guest:***@127.0.0.1:5672/"),
    ("rabbit://u:p%40ss@10.0.0.1:5672,u:p%40ss@10.0.0.2:5672/nova",
     "rabbit://u:***@10.0.0.1:5672,u:***@10.0.0.2:5672/nova"),
    ("rabbit://10.0.0.1:5672/", "rabbit://10.0.0.1:5672/"),
])
def test_the_url_is_shown_without_the_password(url, shown):
    assert notifications.redacted(url) == shown


def test_redaction_covers_every_host_of_a_cluster_url():
    url = "rabbit://u:pw1@a:5672,u:pw2@b:5672/"
    assert "pw" not in notifications.redacted(url)


def test_the_server_is_the_payloads_uuid():
    payload = {"nova_object.name": "InstanceActionPayload",
               "nova_object.data": {"uuid": "abc", "host": "compute2"}}
    assert notifications.server_id(payload) == "abc"
    assert notifications.server_id({}) is None and notifications.server_id("x") is None


def test_only_events_that_can_move_a_server_get_through():
    import oslo_messaging as messaging  # noqa: F401 - the filter is oslo's own
    seen = []
    ep = notifications._Endpoint(lambda e, s: seen.append((e, s)), logging.getLogger("t"))
    ok = ep.filter_rule.match
    assert ok({}, "nova-compute:c2", "instance.live_migration_post_dest.end", {}, {})
    assert ok({}, "nova-api:x", "instance.evacuate", {}, {})
    assert not ok({}, "nova-compute:c1", "instance.live_migration_post.end", {}, {})
    assert not ok({}, "nova-compute:c1", "instance.power_off.end", {}, {})
    ep.info({}, "nova-compute:c2", "instance.rebuild.end",
            {"nova_object.data": {"uuid": "s1"}}, {})
    assert seen == [("instance.rebuild.end", "s1")]


def test_a_failing_handler_is_logged_not_raised(caplog):
    def boom(e, s):
        raise ValueError("bug")
    ep = notifications._Endpoint(boom, logging.getLogger("t"))
    with caplog.at_level(logging.ERROR):
        assert ep.info({}, "p", "instance.delete.end", {}, {}) is None
    assert "not handled" in caplog.text
