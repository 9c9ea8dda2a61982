"""Benchmark: the node agent's decision time for the costliest affinity annotations the caps
admit (issue #36), beside 10 and 40 containers, on a 224-CPU machine.

The NRI handler (``NriAgent``, as ``hwaffinity agent --mode nri`` runs it, its checkpoint
off) is called in-process: Synchronize with N running bystander containers whose pods
have 253-character names, then CreateContainer for the container of the hostile pod, timed
(the handler's whole answer: parse, caps, affinity evaluation, placement, the updates of
every container). Each shape of tests/agent/hostile.py (many values, long patterns, joint
keys) and the annotation issue #36 timed (4.3 s beside 10 containers before the caps; now
refused by them) are placed ROUNDS times. Prints p50/p99/max against the affinity budget
(``agent.node.AFFINITY_BUDGET``) and containerd's 2 s NRI timeout.

    python benchmarks/bench_annotation_caps.py [--rounds 30]
"""
import argparse
import logging
import os
import platform
import statistics
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(here, ".."))
sys.path.insert(0, os.path.join(here, "..", "tests"))

from bench_agent import _p99  # noqa: E402
from bench_numa import machine  # noqa: E402
from prometheus_client import CollectorRegistry  # noqa: E402

from agent import hostile  # noqa: E402
from agent.nri_runtime import container, sandbox  # noqa: E402
from tacker_hwaffinity.agent.node import AFFINITY_BUDGET, NodeState  # noqa: E402
from tacker_hwaffinity.agent.checkpoint import Checkpoint  # noqa: E402
from tacker_hwaffinity.agent.nri_agent import NriAgent  # noqa: E402
from tacker_hwaffinity.agent.recorder import Recorder  # noqa: E402
from tacker_hwaffinity.agent.runner import Metrics  # noqa: E402
from tacker_hwaffinity.nri import api  # noqa: E402
from tacker_hwaffinity.numa import affinity, decode  # noqa: E402

NRI_TIMEOUT_S = 2.0
LOG = logging.getLogger("bench.caps")


class Quiet:
    def annotate(self, *a):
        pass
    event = annotate


def decision(m, containers, text):
    """Seconds the handler takes to answer CreateContainer for the hostile container,
    and whether it was pinned."""
    metrics = Metrics(CollectorRegistry())
    agent = NriAgent(lambda: NodeState(m), Checkpoint(None), Recorder(Quiet(), metrics, LOG),
                     metrics, log=LOG)
    pods, live = [], []
    for i in range(containers):
        p = sandbox(hostile.LONG_NAME[:-2] + "%02d" % i, "u%d" % i)
        pods.append(p)
        live.append(container(p, "c", "c%d" % i, milli=100, state=api.CONTAINER_RUNNING))
    agent.synchronize(pods, live)
    bad = sandbox("hostile", "uh", annotations={hostile.CR + "affinity": text})
    start = time.perf_counter()
    adjust, _ = agent.create_container(bad, container(bad, "c", "ch", milli=100))
    return time.perf_counter() - start, adjust is not None and "uh" not in {
        k[0] for k in agent.state.errors}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=30)
    args = ap.parse_args()
    logging.basicConfig(level=logging.CRITICAL)
    m = machine()
    print("python %s, %s; %d CPUs; caps: %d characters of text, %d values after alias "
          "expansion, %d affinities, %d expression values (%d per expression), %d characters "
          "of keys and values, %d per value; affinity budget %.0f ms"
          % (platform.python_version(), platform.machine(), len(m.cpus), decode.MAX_TEXT,
             decode.MAX_NODES, affinity.MAX_AFFINITIES, affinity.MAX_VALUES,
             affinity.MAX_EXPRESSION_VALUES, affinity.MAX_CHARS, decode.MAX_STRING,
             AFFINITY_BUDGET * 1000))
    shapes = dict(hostile.worst_admitted_annotations())
    shapes["issue-36"] = hostile.issue_36_annotation()
    for shape, text in shapes.items():
        for containers in (10, 40):
            times, pinned = [], 0
            for _ in range(args.rounds):
                spent, ok = decision(m, containers, text)
                times.append(spent * 1000)
                pinned += ok
            times.sort()
            print("%-13s %5d chars beside %2d containers: p50 %6.1f ms  p99 %6.1f ms  max "
                  "%6.1f ms  pinned %d/%d  (budget %.0f ms, NRI timeout %.0f ms)"
                  % (shape, len(text), containers, statistics.median(times), _p99(times),
                     times[-1], pinned, args.rounds, AFFINITY_BUDGET * 1000,
                     NRI_TIMEOUT_S * 1000))


if __name__ == "__main__":
    main()
