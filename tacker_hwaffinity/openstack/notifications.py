"""Nova's versioned notifications, as a prompt to poll now.

A notification is never trusted for the host itself: ``instance.live_migration_post.end``
still names the source host, only ``..._post_dest.end`` names the new one, and an
evacuation's ``instance.evacuate`` comes from nova-api before the move. So an event that
can change a server's host (or add or remove a worker) only makes the controller poll
Nova at once (``on_event(event_type, server_id)``); the poll decides, as it would at its
interval. Without a broker nothing changes but the delay.

The listener uses oslo.messaging, as Nova does: exchange ``nova``, topic
``versioned_notifications`` (Nova's defaults), priority ``info``, in its own pool (a
queue of its own, so it never takes notifications from another consumer such as
Ceilometer). Only the leader listens. The transport URL holds a password: it is
never logged (``redacted``).
"""
import logging
import re

from tacker_hwaffinity.extras import install_hint

MOVE_EVENTS = (
    "instance.live_migration_post_dest.end",   # the only one naming the new host
    "instance.live_migration_rollback.end",
    "instance.live_migration_abort.end",
    "instance.evacuate",
    "instance.rebuild.end",                    # an evacuation ends with a rebuild
    "instance.resize_finish.end",
    "instance.resize_confirm.end",
    "instance.resize_revert.end",
    "instance.unshelve.end",
    "instance.create.end",
    "instance.delete.end",
)
_EVENT_RE = "^(%s)$" % "|".join(re.escape(e) for e in MOVE_EVENTS)


def redacted(url):
    """URL without the passwords (``rabbit://user:***@host:port/``; every host of a
    cluster URL ``rabbit://u:p@h1,u:p@h2/``)."""
    return _CREDENTIALS.sub(r"\1\2:***@", url)


_CREDENTIALS = re.compile(r"(://|,)([^:@/,]*):([^@/,]*)@")


def server_id(payload):
    data = payload.get("nova_object.data") if isinstance(payload, dict) else None
    return data.get("uuid") if isinstance(data, dict) else None


class _Endpoint:
    def __init__(self, on_event, log):
        import oslo_messaging as messaging
        self.filter_rule = messaging.NotificationFilter(event_type=_EVENT_RE)
        self.on_event, self.log = on_event, log

    def info(self, ctxt, publisher_id, event_type, payload, metadata):
        try:
            self.on_event(event_type, server_id(payload))
        except Exception:
            self.log.exception("notification %s not handled", event_type)


class NotificationListener:
    """Listen on URL until ``stop()``; ``on_event(event_type, server_id)`` per move."""

    def __init__(self, url, on_event, exchange="nova", topic="versioned_notifications",
                 pool="hwaffinity-controller", log=None):
        self.url, self.on_event = url, on_event
        self.exchange, self.topic, self.pool = exchange, topic, pool
        self.log = log or logging.getLogger("hwaffinity.notifications")
        self._listener = self._thread = self._stopping = None

    def describe(self):
        return "%s (exchange %s, topic %s, pool %s)" % (redacted(self.url), self.exchange,
                                                        self.topic, self.pool)

    @property
    def running(self):
        return self._thread is not None

    def start(self):
        """Connect and listen in the background (a broker that is down does not
        hold the caller up: oslo.messaging keeps reconnecting)."""
        import threading
        self._stopping = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(self._stopping,), daemon=True,
                                        name="nova-notifications")
        self._thread.start()

    def _run(self, stopping):
        try:
            import oslo_messaging as messaging
            from oslo_config import cfg
        except ImportError as e:
            self.log.warning("Nova notifications: not listening: %s (the controller "
                             "extra: %s)", e, install_hint("controller"))
            return
        try:
            conf = cfg.ConfigOpts()
            conf([], project="hwaffinity", default_config_files=[], default_config_dirs=[])
            transport = messaging.get_notification_transport(conf, url=self.url)
            listener = messaging.get_notification_listener(
                transport, [messaging.Target(topic=self.topic, exchange=self.exchange)],
                [_Endpoint(self.on_event, self.log)], executor="threading", pool=self.pool)
            listener.start()
        except Exception as e:  # noqa: BLE001 - a bad URL or driver: say it, poll on
            self.log.warning("Nova notifications: not listening on %s: %s",
                             redacted(self.url), e)
            return
        self._listener = listener
        self.log.info("Nova notifications: listening on %s", self.describe())
        stopping.wait()
        listener.stop()
        listener.wait()
        self.log.info("Nova notifications: stopped listening")

    def stop(self, timeout=10):
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            thread.join(timeout)
        self._listener = None
