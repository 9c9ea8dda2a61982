"""The promise of one replica per physical host, judged over a random lifecycle
(``lifecycles.py``, run by the story's ``test_random_lifecycles_keep_one_replica_a_host``
and by ``benchmarks/bench_lifecycles.py``): which events may leave two replicas of a
workload with required anti-affinity on the host key on one physical host, for how long,
and the judgement of what the checker saw. Pure: every time is in seconds on one
monotonic clock.

The windows (doc/host-truth.md, "Windows"), after an event of that kind ends:

* a live migration onto another worker's host, which the scheduler never saw: until the
  controller's next poll relabels the node (``poll``) and the replica is evicted (one
  eviction per ``eviction_interval``; two workloads may have one each), plus ``SLACK_S``.
  Anti-affinity counts at once: ``--grace`` is affinity's forgiveness only
  (``controller.rules.Forgiveness``), so it is no part of any window;
* a controller restart: a violation open when it stopped may last until the new
  controller has started and polled (``START_S``) and the evictions are done, plus
  ``SLACK_S``;
* every other event (VNF-A scale-out and scale-in, a worker's heal, a live migration to a
  free host, VNF-B scale-out and scale-in, a pod's heal): none. A worker that joins or
  returns is tainted until its label is Nova's answer, and labels that are true keep
  kube-scheduler's anti-affinity exact.

A workload whose anti-affinity is RequiredDuringScheduling only (IgnoredDuringExecution,
no ``hwaffinity.io/required-during-execution``) asked not to be moved: two replicas that
a live migration put together stay together until the VMs part. Such a colocation is
*held*: it must begin inside a window (it is never the scheduler's doing), and the
controller's ``hwaffinity_workload_intent_met`` must say 0 within ``alert_bound``.
"""
import collections
import dataclasses
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

SCALE_OUT_WORKERS = "VNF-A scale-out"
SCALE_IN_WORKERS = "VNF-A scale-in"
HEAL_WORKER = "worker heal"
MIGRATE_FREE = "live migration to a free host"
MIGRATE_OCCUPIED = "live migration onto a worker's host"
SCALE_OUT_CNF = "VNF-B scale-out"
SCALE_IN_CNF = "VNF-B scale-in"
HEAL_POD = "pod heal"
RESTART_CONTROLLER = "controller restart"
KINDS = (SCALE_OUT_WORKERS, SCALE_IN_WORKERS, HEAL_WORKER, MIGRATE_FREE, MIGRATE_OCCUPIED,
         SCALE_OUT_CNF, SCALE_IN_CNF, HEAL_POD, RESTART_CONTROLLER)

SAMPLE_S = 1.0      # the checker's period: a start or an end is seen at most this late
SLACK_S = 15.0      # API round trips, the controller's tick, binding, the kubelet's tick
START_S = 20.0      # a controller's process start to its first poll (lease included)


@dataclasses.dataclass(frozen=True)
class Timings:
    """The controller's timing flags (seconds); the windows depend on the poll and the
    eviction interval (the grace is affinity's, passed so that a run has the flags'
    values)."""
    poll: float                 # --poll-interval
    grace: float                # --grace
    eviction_interval: float    # --eviction-interval

    def flags(self) -> List[str]:
        return ["--poll-interval", "%g" % self.poll, "--grace", "%g" % self.grace,
                "--eviction-interval", "%g" % self.eviction_interval]


SHIPPED = Timings(poll=30.0, grace=60.0, eviction_interval=10.0)    # the flags' defaults
SHORT = Timings(poll=5.0, grace=10.0, eviction_interval=2.0)        # CI's sequence


def window(kind: str, timings: Timings) -> float:
    """Seconds after an event of KIND ends during which two replicas may still share a
    host (0: at no moment, during the event or after it)."""
    evictions = 2 * timings.eviction_interval + SLACK_S
    if kind == MIGRATE_OCCUPIED:
        return timings.poll + evictions
    if kind == RESTART_CONTROLLER:
        return START_S + evictions
    return 0.0


def longest_gap_bound(timings: Timings) -> float:
    """Seconds the checker may go between two samples: the shortest window the run
    judges. A gap never hides a window overrun or a held colocation (both are still there
    at the next sample; an end seen late makes a violation look longer). It can hide an
    evicted workload's colocation that begins and ends inside it, and one that began up to
    a gap before a window opened can look as if it began inside it: a run's longest gap is
    its resolution, printed with its table. Bounding it by
    the shortest window keeps every window sampled many times while a loaded machine may
    take seconds over one Nova list."""
    return min(window(kind, timings) for kind in KINDS if window(kind, timings) > 0)


def alert_bound(timings: Timings) -> float:
    """Seconds from a held colocation's start to the controller's gauge saying so: its
    next poll, or a restarting controller's first."""
    return START_S + timings.poll + SLACK_S


@dataclasses.dataclass
class Event:
    kind: str
    start: float
    end: float
    detail: str = ""


@dataclasses.dataclass
class Violation:
    """Replicas of WORKLOAD on one physical HOST, seen from START until END (None: still
    seen); HELD: the workload's anti-affinity is IgnoredDuringExecution; ALERTED: when
    the controller's gauge first said the intent is unmet (None: not yet)."""
    workload: str
    host: str
    start: float
    end: Optional[float] = None
    held: bool = False
    pods: Tuple[str, ...] = ()
    alerted: Optional[float] = None


@dataclasses.dataclass(frozen=True)
class Judged:
    violation: Violation
    kind: Optional[str]     # the event kind it is counted under (None: before any event)
    inside: bool
    seconds: float
    why: str                # "" when inside


def _covers(events: Sequence[Event], timings: Timings) -> List[Tuple[float, float, Event]]:
    """[(from, to, event)] of the windows, merged where they overlap (the event of a
    merged window is its first)."""
    spans = sorted((e.start, e.end + window(e.kind, timings), e) for e in events
                   if window(e.kind, timings) > 0)
    merged: List[Tuple[float, float, Event]] = []
    for lo, hi, e in spans:
        if merged and lo <= merged[-1][1]:
            first = merged[-1]
            merged[-1] = (first[0], max(first[1], hi), first[2])
        else:
            merged.append((lo, hi, e))
    return merged


def judge(events: Sequence[Event], violations: Iterable[Violation], timings: Timings,
          now: float) -> List[Judged]:
    """Each violation judged: inside a window or not, and the event kind it counts under
    (the event that opened the window it is in, else the last event begun before it).
    An evicted workload's violation must lie wholly in one window (an open one is judged
    up to NOW); a held one must begin in one and be alerted within ``alert_bound``."""
    covers = _covers(events, timings)
    ordered = sorted(events, key=lambda e: e.start)
    out = []
    for v in violations:
        end = now if v.end is None else v.end
        seconds = end - v.start
        cover = next(((lo, hi, e) for lo, hi, e in covers if lo <= v.start <= hi), None)
        before = [e for e in ordered if e.start <= v.start]
        kind = cover[2].kind if cover else (before[-1].kind if before else None)
        why = ""
        if cover is None:
            why = "began at %.1f s outside every window (during or after %s)" % (
                v.start, kind or "no event")
        elif not v.held and end > cover[1]:
            why = "lasted %.1f s, past its window (%s at %.1f s: until %.1f s)" % (
                seconds, cover[2].kind, cover[2].start, cover[1])
        elif v.held:
            bound = alert_bound(timings)
            if v.alerted is not None and v.alerted - v.start > bound:
                why = "alerted after %.1f s, over %.0f s" % (v.alerted - v.start, bound)
            elif v.alerted is None and seconds > bound:
                why = "lasted %.1f s and was never alerted (bound %.0f s)" % (seconds, bound)
        out.append(Judged(v, kind, not why, seconds, why))
    return out


@dataclasses.dataclass
class Row:
    events: int = 0
    evicted: int = 0                # evicted workloads' violations inside a window
    held: int = 0                   # held colocations inside a window
    outside: int = 0
    longest: float = 0.0            # evicted workloads' longest exposure (s)
    longest_alert: float = 0.0      # held colocations: longest time to the alert (s)


def table(events: Sequence[Event], judged: Iterable[Judged]) -> Dict[str, Row]:
    """{event kind: Row}, in ``KINDS`` order, every kind present."""
    rows: Dict[str, Row] = collections.OrderedDict((k, Row()) for k in KINDS)
    for e in events:
        rows[e.kind].events += 1
    for j in judged:
        row = rows.setdefault(j.kind or "before any event", Row())
        v = j.violation
        if not j.inside:
            row.outside += 1
        elif v.held:
            row.held += 1
            if v.alerted is not None:
                row.longest_alert = max(row.longest_alert, v.alerted - v.start)
        else:
            row.evicted += 1
            row.longest = max(row.longest, j.seconds)
    return rows


HEADER = ("| event (its window) | events | violations inside it | outside every window | "
          "longest exposure, s | held colocations | longest to the alert, s |\n"
          "|---|---|---|---|---|---|---|")


def markdown(rows: Dict[str, Row], timings: Timings) -> str:
    """The table as the README quotes it, with each kind's window."""
    lines = [HEADER]
    for kind, r in rows.items():
        w = window(kind, timings)
        lines.append("| %s (window %s) | %d | %d | %d | %s | %d | %s |" % (
            kind, "%.0f s" % w if w else "none", r.events, r.evicted, r.outside,
            "%.0f" % r.longest if r.evicted else "-", r.held,
            "%.0f" % r.longest_alert if r.held else "-"))
    return "\n".join(lines)
