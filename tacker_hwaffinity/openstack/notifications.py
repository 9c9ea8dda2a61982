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
never logged. What is logged of the URL is what oslo.messaging's own parser
(``TransportURL.parse``) reads in it, rebuilt without the passwords (``redacted``); the
listener's transport is made from that same parse.
"""
import logging
import re
import threading
import typing
import urllib.parse

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


def parse(url, conf=None):
    """URL as oslo.messaging reads it (its ``TransportURL``); ValueError, naming the
    reason but nothing of the URL, if it cannot read it."""
    import oslo_messaging as messaging
    from oslo_config import cfg
    logging.getLogger("oslo_messaging.transport").addFilter(_HOSTS_OF_A_MIXED_URL)
    try:
        return messaging.TransportURL.parse(conf or cfg.ConfigOpts(), url)
    except messaging.InvalidTransportURL as e:
        raise ValueError(str(e)) from None
    except ValueError as e:  # urllib's netloc check, a port that is no number, a bad [IPv6]
        raise ValueError("%s (not a host:port, or a netloc urllib refuses)"
                         % type(e).__name__) from None


class _HostsNotShown(logging.Filter):
    """oslo.messaging's warning about a URL with and without passwords lists the hosts
    without one, which are parts of a password that holds an unescaped ',': it is kept,
    without the lists."""

    def filter(self, record):
        if str(record.msg).startswith("All hosts must be set with username/password"):
            record.msg = ("All hosts must be set with username/password or not at the same "
                          "time (the hosts are not shown: they may be parts of a password)")
            record.args = ()
        return True


_HOSTS_OF_A_MIXED_URL = _HostsNotShown()


def redacted(url):
    """What of URL can be logged: each host as oslo.messaging parses it, with its user
    name and ``***`` for its password, and the virtual host (the query, driver options,
    is left out): ``rabbit://user:***@h1:5672,user:***@h2:5672/vhost``. A URL it cannot
    parse, or whose userinfo it would not read whole as userinfo (an unescaped ``/ ? # ,``
    in a password moves the rest into the path or a host), shows only its transport."""
    try:
        parsed = parse(url)
    except (ImportError, ValueError):
        return _transport_only(url)
    if not _userinfo_whole(url, parsed):
        return _transport_only(url)
    return _shown(parsed)


def _userinfo_whole(url, parsed):
    """Whether every ``@`` of URL ends a userinfo oslo.messaging read as one: none after
    the hosts, and a password on every host when one has a user."""
    split = urllib.parse.urlsplit(url)   # the split TransportURL.parse starts with
    if "@" in split.path + split.query + split.fragment:
        return False
    return "@" not in split.netloc or all(h.password is not None for h in parsed.hosts)


def _shown(parsed):
    """PARSED as ``TransportURL.__str__`` writes it, ``***`` for each password, no query."""
    netlocs = []
    for host in parsed.hosts:
        userinfo = "" if host.username is None else "%s:***@" % urllib.parse.quote(
            host.username, "")
        name = host.hostname or ""
        port = "" if host.port is None else ":%d" % host.port
        netlocs.append(userinfo + ("[%s]" % name if ":" in name else name) + port)
    return "%s://%s/%s" % (parsed.transport, ",".join(netlocs),
                           urllib.parse.quote(parsed.virtual_host or ""))


def _transport_only(url):
    scheme = _SCHEME.match(url) if isinstance(url, str) else None
    return "%s://(not shown: oslo.messaging cannot read it as host list and userinfo)" % (
        scheme.group(1) if scheme else "?")


_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.-]*):")


def _masked(text, parsed):
    """TEXT (an error of the transport) without the passwords of PARSED, in any form."""
    for host in parsed.hosts:
        if host.password:
            for form in sorted({host.password, urllib.parse.quote(host.password, ""),
                                urllib.parse.quote(host.password)}, key=len, reverse=True):
                text = text.replace(form, "***")
    return text


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

    def __init__(self, url: str, on_event: typing.Callable[[str, typing.Optional[str]], None],
                 exchange: str = "nova", topic: str = "versioned_notifications",
                 pool: str = "hwaffinity-controller",
                 log: typing.Optional[logging.Logger] = None) -> None:
        self.url, self.on_event = url, on_event
        self.exchange, self.topic, self.pool = exchange, topic, pool
        self.log = log or logging.getLogger("hwaffinity.notifications")
        self._listener: typing.Any = None       # oslo.messaging's, while it listens
        self._thread: typing.Optional[threading.Thread] = None
        self._stopping = threading.Event()

    def describe(self) -> str:
        return "%s (exchange %s, topic %s, pool %s)" % (redacted(self.url), self.exchange,
                                                        self.topic, self.pool)

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        """Connect and listen in the background (a broker that is down does not
        hold the caller up: oslo.messaging keeps reconnecting)."""
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
        conf = cfg.ConfigOpts()
        conf([], project="hwaffinity", default_config_files=[], default_config_dirs=[])
        try:
            parsed = parse(self.url, conf)
        except ValueError as e:
            self.log.warning("Nova notifications: not listening on %s: %s",
                             redacted(self.url), e)
            return
        try:
            transport = messaging.get_notification_transport(conf, url=parsed)
            listener = messaging.get_notification_listener(
                transport, [messaging.Target(topic=self.topic, exchange=self.exchange)],
                [_Endpoint(self.on_event, self.log)], executor="threading", pool=self.pool)
            listener.start()
        except Exception as e:  # noqa: BLE001 - a bad driver or broker: say it, poll on
            self.log.warning("Nova notifications: not listening on %s: %s: %s",
                             redacted(self.url), type(e).__name__,
                             _masked(str(e), parsed))
            return
        self._listener = listener
        self.log.info("Nova notifications: listening on %s", self.describe())
        stopping.wait()
        listener.stop()
        listener.wait()
        self.log.info("Nova notifications: stopped listening")

    def stop(self, timeout: float = 10) -> None:
        thread, self._thread = self._thread, None
        if thread is not None:
            self._stopping.set()
            thread.join(timeout)
        self._listener = None
