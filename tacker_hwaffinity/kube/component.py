"""The one runner of the daemons (agent, controller, webhook).

:func:`run` does for each what they share: logging, the thread :class:`~kube.health.
Supervisor`, the health and metrics server (:class:`~kube.serve.HealthServer`), SIGTERM
and SIGINT as the stop, the start lines, and the stop itself (server, threads, what
the component opened). A daemon says only what is its own: a :class:`Component`
whose ``start`` starts its threads and returns :class:`Started`.
"""
import dataclasses
import logging
import signal
import sys
import threading
import typing

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.kube.health import Supervisor

if typing.TYPE_CHECKING:     # imported by run(), which makes it
    from prometheus_client import CollectorRegistry

LOG_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
JOIN_TIMEOUT_S = 10.0       # how long the stop waits for the worker threads in all


class Refused(Exception):
    """The component cannot start here (no API server, a node check failed): its
    message is one line on stderr after ``hwaffinity NAME:``, and the exit status 2."""


@dataclasses.dataclass(frozen=True)
class Address:
    """Where a component serves: HOST and PORT, given by the flag FLAG."""

    host: str
    port: int
    flag: str


def parse_address(text: str, flag: str) -> Address:
    """The :class:`Address` of HOST:PORT TEXT (no host: all addresses), given by FLAG."""
    host, _, port = text.rpartition(":")
    try:
        return Address(host or "0.0.0.0", int(port), flag)
    except ValueError:
        raise InputError("expected HOST:PORT, got %r" % text, field=flag)


@dataclasses.dataclass(frozen=True)
class Context:
    """What the runner gives a component's start."""

    log: logging.Logger
    """The component's logger (``hwaffinity.NAME``)."""
    registry: "CollectorRegistry"
    """The prometheus_client CollectorRegistry that /metrics serves."""
    workers: Supervisor
    """The kube.health.Supervisor that starts its threads; ``workers.stop`` is the stop."""


def _wait(stop: threading.Event) -> None:
    stop.wait()


@dataclasses.dataclass
class Started:
    """What a started component gives the runner."""

    ready: typing.Callable[[], typing.Tuple[bool, str]]
    """Readiness once no worker died: (ok, message), e.g. the caches synced."""
    start_lines: typing.Callable[[int], typing.Sequence[str]]
    """The lines logged once it serves, given the port bound."""
    main: typing.Callable[[threading.Event], None] = _wait
    """What the main thread runs until the stop is set."""
    close: typing.Sequence[typing.Callable[[], None]] = ()
    """Called in order once stopped, after the server and the threads."""
    server_options: typing.Mapping[str, typing.Any] = dataclasses.field(default_factory=dict)
    """HealthServer's further keyword arguments (posts, tls, ...)."""


class Component(typing.Protocol):
    """A daemon the runner runs."""

    name: str
    """``agent``: its logger is ``hwaffinity.agent``, its refusals ``hwaffinity agent: ...``."""
    log_level: str
    address: Address
    """Where /metrics, the probes and ``Started.server_options``' routes are served."""

    def start(self, context: Context) -> Started:
        """Open what it needs and start its threads; Refused or InputError when it cannot."""


def configure_logging(name: str, level: str) -> logging.Logger:
    """Log lines on stderr at LEVEL; the component's logger ``hwaffinity.NAME``."""
    logging.basicConfig(level=level, stream=sys.stderr, format=LOG_FORMAT)
    # the informer says once why a call failed; urllib3's own retry warning would repeat it
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    return logging.getLogger("hwaffinity." + name)


def run(component: Component) -> int:
    """Run COMPONENT until SIGTERM or SIGINT; the exit status 0. InputError when it is
    Refused or cannot serve."""
    from prometheus_client import CollectorRegistry

    from tacker_hwaffinity.kube.serve import HealthServer
    log = configure_logging(component.name, component.log_level)
    registry = CollectorRegistry()
    stop = threading.Event()
    workers = Supervisor(stop, log=log)
    started, server = None, None
    try:
        try:
            started = component.start(Context(log, registry, workers))
        except Refused as e:  # the CLI's one error line and exit 2, as for bad flags
            raise InputError(str(e)) from None
        address = component.address
        server = HealthServer(address.port, host=address.host, registry=registry,
                              health=workers.health(started.ready), live=workers.live,
                              **started.server_options)
        try:
            server.start()
        except (OSError, ValueError) as e:          # ssl.SSLError is an OSError
            server = None
            raise InputError("cannot serve on %s:%d: %s" % (address.host, address.port, e),
                             field=address.flag)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, lambda *_: stop.set())
        for line in started.start_lines(server.port):
            log.info("%s", line)
        started.main(stop)
    finally:
        stop.set()
        if server is not None:
            server.stop()
        workers.join(JOIN_TIMEOUT_S)
        for close in started.close if started is not None else ():
            close()
    return 0
