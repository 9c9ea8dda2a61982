"""A component's worker threads and what its probes answer.

Every long-running thread of the agent, the controller and the webhook (the
informers' watch loops, the agent's resync, the leader election) is started by
one :class:`Supervisor`. A worker that raises, or returns while the component
is not stopping, is recorded as dead: from then on the liveness answer
(``/livez``) and the health answer (``/healthz``, ``/readyz``) are 503 with one
line naming the thread and the exception, so that the kubelet restarts the
container instead of leaving a component that silently stopped watching.

Readiness (``/healthz``, ``/readyz``) also waits for the component's first full
reconcile (the READY callable given to :meth:`Supervisor.health`); liveness does
not, so that a long first list is not killed by the liveness probe.
"""
import logging
import re
import threading
import time
from collections.abc import Callable
from typing import Any

MAX_REASON = 300

# What a probe answers: (ok, one line saying why not, or "ok").
ProbeAnswer = tuple[bool, str]
HealthCheck = Callable[[], ProbeAnswer]
_USERINFO = re.compile(r"(\b[a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]*@")


def one_line(e: BaseException) -> str:
    """``Type: first line of the message``, at most MAX_REASON characters, with any
    ``user:password@`` of a URL in it masked."""
    lines = (str(e).strip() or "").splitlines()
    text = "%s: %s" % (type(e).__name__, lines[0]) if lines else type(e).__name__
    text = _USERINFO.sub(r"\1***@", text)
    return text if len(text) <= MAX_REASON else text[:MAX_REASON - 3] + "..."


class Supervisor:
    """Start named daemon threads and remember which died and why. STOP (a
    ``threading.Event``) is the component's stop: a worker that returns after it
    was set ended normally."""

    def __init__(self, stop: threading.Event, log: logging.Logger | None = None) -> None:
        self.stop = stop
        self.log = log or logging.getLogger(__name__)
        self.threads: dict[str, threading.Thread] = {}
        self._deaths: list[tuple[str, str]] = []    # (name, reason) in the order they died
        self._lock = threading.Lock()

    def start(self, name: str, target: Callable[..., object], *args: Any) -> threading.Thread:
        """Run TARGET(*ARGS) in a daemon thread called NAME; returns the thread."""
        thread = threading.Thread(target=self._run, args=(name, target, args),
                                  name=name, daemon=True)
        self.threads[name] = thread
        thread.start()
        return thread

    def _run(self, name: str, target: Callable[..., object], args: tuple[Any, ...]) -> None:
        try:
            target(*args)
        except BaseException as e:  # every death is recorded (and logged unless stopping)
            if not self.stop.is_set():
                self.log.error("worker thread %s died: %s", name, one_line(e), exc_info=True)
            self.died(name, one_line(e))
            return
        if not self.stop.is_set():
            self.log.error("worker thread %s ended while the component runs", name)
            self.died(name, "ended while the component runs")

    def died(self, name: str, reason: str) -> None:
        """Record that NAME died of REASON (also for a thread not started here)."""
        with self._lock:
            self._deaths.append((name, reason))

    def deaths(self) -> list[tuple[str, str]]:
        with self._lock:
            return list(self._deaths)

    def live(self) -> ProbeAnswer:
        """(ok, message) for the liveness probe: no worker died."""
        deaths = self.deaths()
        if deaths:
            name, reason = deaths[0]
            more = " (and %d more)" % (len(deaths) - 1) if len(deaths) > 1 else ""
            return False, "worker thread %s died: %s%s" % (name, reason, more)
        return True, "ok"

    def health(self, ready: HealthCheck) -> HealthCheck:
        """A health callable for ``kube.serve.HealthServer``: not ok when a worker
        died, else READY() ((ok, message): the first full reconcile is done)."""
        def check() -> ProbeAnswer:
            ok, message = self.live()
            if not ok:
                return ok, message
            return ready()
        return check

    def join(self, timeout: float) -> None:
        """Wait up to TIMEOUT seconds in all for the threads (after STOP was set)."""
        deadline = time.monotonic() + timeout
        for thread in list(self.threads.values()):
            thread.join(max(0.0, deadline - time.monotonic()))
