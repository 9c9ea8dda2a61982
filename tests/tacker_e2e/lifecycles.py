"""A random lifecycle on the story's harness: a seeded sequence of events on VNF-A (the
cluster, through Tacker v2 and Nova) and VNF-B (the CNF, through Tacker v2) while the
controller runs, and a checker that samples Nova's truth every second meanwhile, not the
labels: which replicas of a workload with required anti-affinity on the host key are
bound to workers on one physical host. ``windows.py`` judges what it saw.

Why not hypothesis's stateful testing: one example is minutes of a real cloud, so
shrinking by re-running is out of reach; a seed replays the choices instead (the state
they are made from is Nova's and kube-scheduler's, so a replay may differ where their
placements do). The events come from a shuffled deck of every kind, so a short sequence
covers the kinds before it repeats one; a kind that cannot run now (no free host, no
room for a replica) stays in the deck.
"""
import collections
import random
import threading
import time
from typing import Callable, Dict, List, Optional

from controlplane.test_audit_e2e import _gauges
from controlplane.test_controller_e2e import _kill, _start
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
from tacker_hwaffinity.scheduling.annotations import REQUIRED_DURING_EXECUTION

from . import windows as w
from .vnf import HOST

APP = "app.kubernetes.io/name"
REPLICAS = "upf"                # VNF-B's workload the CNF events scale and heal
MIN_WORKERS, MAX_WORKERS = 3, 5
ASPECT, MAX_LEVEL = "upf_aspect", 3     # csar/cnf: 3 replicas + 1 a level


def anti_affinity(pod) -> Optional[str]:
    """"evicted" (RequiredDuringExecution), "held" (required at scheduling only) or None:
    POD's required anti-affinity against its own workload on the host key."""
    own = pod["metadata"].get("labels") or {}
    terms = ((pod["spec"].get("affinity") or {}).get("podAntiAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or []
    if not any(t.get("topologyKey") == DEFAULT_HOST_LABEL
               and (t.get("labelSelector") or {}).get("matchLabels")
               and (t["labelSelector"]["matchLabels"]).items() <= own.items() for t in terms):
        return None
    annotations = pod["metadata"].get("annotations") or {}
    return "evicted" if "podAntiAffinity" in annotations.get(REQUIRED_DURING_EXECUTION, "") \
        else "held"


class Checker(threading.Thread):
    """Every ``SAMPLE_S``: Nova's servers (one list) and NAMESPACE's pods (one list); the
    replicas of a workload with required anti-affinity that share a physical host, as
    ``windows.Violation``s (open ones in ``open``, ended ones in ``ended``). A held
    colocation is marked alerted once GAUGES() (the controller's) says its workload's
    intent is unmet."""

    def __init__(self, cloud, cp, namespace, node_name: Callable[[str], str],
                 gauges: Callable[[], dict]):
        super().__init__(name="lifecycle-checker", daemon=True)
        self.nova = cloud.nova("admin", version="latest")
        self.cp, self.namespace, self.node_name, self.gauges = cp, namespace, node_name, gauges
        self.open: Dict[tuple, w.Violation] = {}
        self.ended: List[w.Violation] = []
        self.samples, self.errors, self.longest_gap = 0, collections.Counter(), 0.0
        self.last = 0.0             # when the last sample was taken
        self.lock = threading.Lock()
        self._stop_event = threading.Event()

    def run(self):
        last = time.monotonic()
        while not self._stop_event.wait(max(0.0, last + w.SAMPLE_S - time.monotonic())):
            try:
                self.sample()
            except Exception as e:  # noqa: BLE001 - counted, and judged by the caller
                self.errors[type(e).__name__] += 1
                continue
            now = time.monotonic()
            self.longest_gap = max(self.longest_gap, now - last)
            last = now

    def stop(self):
        self._stop_event.set()
        self.join(30)

    def sample(self):
        servers = self.nova.servers.list(search_opts={"all_tenants": 1})
        pods = self.cp.admin.get("/api/v1/namespaces/%s/pods" % self.namespace)["items"]
        now = time.monotonic()
        host_of = {}        # node -> Nova's host of its (newest) server
        for s in sorted(servers, key=lambda s: s.created):
            address = next((a["addr"] for nets in (s.addresses or {}).values() for a in nets),
                           None)
            if address:
                host_of[self.node_name(address)] = getattr(s, HOST)
        together, kind_of = collections.defaultdict(list), {}
        for p in pods:
            kind = anti_affinity(p)
            host = host_of.get(p["spec"].get("nodeName"))
            if kind is None or host is None:
                continue
            workload = (p["metadata"].get("labels") or {}).get(APP, "")
            together[(workload, host)].append(p["metadata"]["name"])
            kind_of[workload] = kind
        shared = {k: v for k, v in together.items() if len(v) > 1}
        with self.lock:
            for key in [k for k in self.open if k not in shared]:
                violation = self.open.pop(key)
                violation.end = now
                self.ended.append(violation)
            for key, names in shared.items():
                if key not in self.open:
                    self.open[key] = w.Violation(key[0], key[1], now,
                                                 held=kind_of[key[0]] == "held",
                                                 pods=tuple(sorted(names)))
            unalerted = [v for v in self.open.values() if v.held and v.alerted is None]
        self.samples += 1
        self.last = now
        if unalerted:
            self._alerts(unalerted, now)

    def _alerts(self, violations, now):
        try:
            gauges = self.gauges()
        except (OSError, AttributeError):    # the controller restarting: not serving
            return
        unmet = {dict(labels).get("name") for (metric, labels), value in gauges.items()
                 if metric == "hwaffinity_workload_intent_met" and value == 0
                 and dict(labels).get("namespace") == self.namespace}
        for v in violations:
            if v.workload in unmet:
                v.alerted = now

    def violations(self) -> List[w.Violation]:
        with self.lock:
            return list(self.ended) + list(self.open.values())


class Lifecycle:
    """The events, chosen by a ``random.Random(SEED)`` from the state of the moment, run
    one after the other (a pause of up to one poll between two), each recorded as a
    ``windows.Event``.

    VNF_A and VNF_B are ``vnf.Vnf``s (v2); CNF_REQUEST(name) is VNF-B's sample request;
    START(name) starts a controller with TIMINGS and returns (process, log)."""

    def __init__(self, seed, timings: w.Timings, vnf_a, vnf_b, cloud, cp, namespace,
                 cnf_request, start):
        self.rng = random.Random(seed)
        self.seed, self.timings = seed, timings
        self.vnf_a, self.vnf_b, self.cloud, self.cp = vnf_a, vnf_b, cloud, cp
        self.namespace, self.cnf_request, self.start = namespace, cnf_request, start
        self.nova = cloud.nova("admin", version="latest")
        self.events: List[w.Event] = []
        self.deck: List[str] = []
        self.restarts = 0
        self.controller = start("lifecycle-0")

    # -- the state of the moment ------------------------------------------------------

    def _workers(self):
        """{server id: (node, Nova's host)} of VNF-A's workers."""
        out = {}
        for server_id in self.vnf_a.workers().values():
            server = self.nova.servers.get(server_id)
            out[server_id] = (self.vnf_a.kubelets.node_name(
                self.vnf_a.kubelets.address(server)), getattr(server, HOST))
        return out

    def _replicas(self):
        """(desired, pods) of REPLICAS."""
        deploy = self.cp.admin.get("/apis/apps/v1/namespaces/%s/deployments/%s" % (
            self.namespace, REPLICAS))
        pods = [p for p in self.cp.pods(self.namespace, "%s=%s" % (APP, REPLICAS))
                if not p["metadata"].get("deletionTimestamp")]
        return deploy["spec"]["replicas"], pods

    def _scale_level(self):
        """Tacker's scale level of VNF-B's upf aspect (what a scale is checked against)."""
        status = self.vnf_b.instance()["instantiatedVnfInfo"].get("scaleStatus") or ()
        return next((s["scaleLevel"] for s in status if s["aspectId"] == ASPECT), 0)

    def _quiet(self, workers):
        """True when the labels are Nova's and every replica of REPLICAS is bound, each
        on its own physical host: a CNF operation then has the room the placement shows
        (Tacker waits for the Deployment's replicas to be ready, so it would otherwise
        race the controller's eviction, or wait on a replica that has no host)."""
        nodes = {n["metadata"]["name"]: n for n in self.cp.admin.get("/api/v1/nodes")["items"]}
        for node, host in workers.values():
            labels = (nodes.get(node, {}).get("metadata", {}).get("labels") or {})
            if labels.get(DEFAULT_HOST_LABEL) != host:
                return False
        desired, pods = self._replicas()
        host_of = dict(workers.values())
        hosts = [host_of.get(p["spec"].get("nodeName")) for p in pods]
        return len(pods) == desired and None not in hosts and len(set(hosts)) == len(hosts)

    def _action(self, kind, workers):
        """The action of KIND that the state allows now (a callable returning a detail;
        it draws its choices when called), else None."""
        rng = self.rng
        hosts = {h for _, h in workers.values()}
        free = set(self.cloud.hosts) - hosts
        if kind == w.SCALE_OUT_WORKERS and len(workers) < MAX_WORKERS:
            return lambda: self._vnf_a("SCALE", "scale_out_workers.json")
        if kind == w.SCALE_IN_WORKERS and len(workers) > MIN_WORKERS:
            return lambda: self._vnf_a("SCALE", "scale_in_workers.json")
        if kind == w.HEAL_WORKER:
            return lambda: self._vnf_a("HEAL", "heal_worker.json", vnfcInstanceId=[
                rng.choice(sorted(self.vnf_a.workers()))])
        if kind == w.MIGRATE_FREE and free:
            return lambda: self._migrate(rng.choice(sorted(workers)),
                                         rng.choice(sorted(free)))
        if kind == w.MIGRATE_OCCUPIED and len(hosts) > 1:
            def onto():
                server = rng.choice(sorted(workers))
                return self._migrate(server, rng.choice(sorted(hosts - {workers[server][1]})))
            return onto
        if kind in (w.SCALE_OUT_CNF, w.SCALE_IN_CNF, w.HEAL_POD) and self._quiet(workers):
            desired, pods = self._replicas()
            level = self._scale_level()
            if kind == w.SCALE_OUT_CNF and level < MAX_LEVEL and desired < len(hosts):
                return lambda: self._vnf_b("SCALE", self.cnf_request("scale_out_upf.json"))
            if kind == w.SCALE_IN_CNF and level > 0:
                return lambda: self._vnf_b("SCALE", dict(
                    self.cnf_request("scale_out_upf.json"), type="SCALE_IN"))
            if kind == w.HEAL_POD and pods:
                return self._heal_pod
        if kind == w.RESTART_CONTROLLER:
            return self._restart
        return None

    # -- the events ---------------------------------------------------------------------

    def step(self):
        """Run the next event; returns it. The next kind of the deck that the state
        allows; when none does, the state is asked again every second for the time a
        relabel takes (the controller's poll, or its start), then any kind it allows
        (a controller restart always can)."""
        if not self.deck:
            self.deck = list(w.KINDS)
            self.rng.shuffle(self.deck)
        deadline = time.monotonic() + self.timings.poll + w.START_S
        while True:
            workers = self._workers()
            kind, action = next(((k, a) for k, a in ((k, self._action(k, workers))
                                                       for k in self.deck) if a), (None, None))
            if action is not None:
                self.deck.remove(kind)
                break
            if time.monotonic() >= deadline:
                kinds = list(w.KINDS)
                self.rng.shuffle(kinds)
                kind, action = next((k, a) for k, a in ((k, self._action(k, workers))
                                                         for k in kinds) if a)
                break
            time.sleep(w.SAMPLE_S)
        start = time.monotonic()
        detail = action()
        event = w.Event(kind, start, time.monotonic(), detail)
        self.events.append(event)
        return event

    def run(self, max_events, budget_s, log=print):
        """Events until MAX_EVENTS or BUDGET_S, with a pause of up to one poll between
        two; then one colocation of two upf replicas left alone (``collide``)."""
        deadline = time.monotonic() + budget_s
        while len(self.events) < max_events and time.monotonic() < deadline:
            self._log(self.step(), log)
            time.sleep(self.rng.uniform(0, self.timings.poll))
        event = self.collide()
        if event is not None:
            self._log(event, log)

    def _log(self, event, log):
        log("lifecycle seed %d, event %d: %s (%.1f s) %s" % (
            self.seed, len(self.events), event.kind, event.end - event.start, event.detail))

    def collide(self):
        """A worker carrying a upf replica live-migrated onto the host of another that
        carries one, and nothing after it: the exposure measured is what the controller's
        timings make of a colocation that nothing else ends (None: no two replicas on
        two hosts to put together)."""
        workers = self._workers()
        host_of = dict(workers.values())
        _, pods = self._replicas()
        carrying = sorted({p["spec"].get("nodeName") for p in pods} & set(host_of))
        server_of = {node: s for s, (node, _) in workers.items()}
        pairs = [(a, b) for a in carrying for b in carrying if host_of[a] != host_of[b]]
        if not pairs:
            return None
        moving, onto = self.rng.choice(pairs)
        start = time.monotonic()
        detail = self._migrate(server_of[moving], host_of[onto]) + " (left alone)"
        event = w.Event(w.MIGRATE_OCCUPIED, start, time.monotonic(), detail)
        self.events.append(event)
        return event

    def _vnf_a(self, operation, name, **changes):
        body = self.vnf_a.request(name)
        body.update(changes)
        # the soft group's creation race converges (the story's choice for VNF-A)
        body["additionalParams"]["hwaffinity_param"]["on_colocation"] = "respread"
        occ = self.vnf_a.run(operation, getattr(self.vnf_a.client, {
            "SCALE": "scale_vnf_instance", "HEAL": "heal_vnf_instance"}[operation]),
            self.vnf_a.id, body, label=name.replace(".json", ""))
        assert occ["operationState"] == "COMPLETED", (self.seed, name, occ.get("error"))
        # every worker's label is Nova's answer when the MgmtDriver's hook ends
        workers = self._workers()
        labels = {node: (self.vnf_a.kubelets.node(s)["metadata"].get("labels") or {}).get(
            DEFAULT_HOST_LABEL) for s, (node, _) in workers.items()}
        assert labels == {node: host for node, host in workers.values()}, (self.seed, labels)
        return "%s, %d workers on %d hosts" % (
            name, len(workers), len({h for _, h in workers.values()}))

    def _vnf_b(self, operation, body):
        occ = self.vnf_b.run(operation, getattr(self.vnf_b.client, {
            "SCALE": "scale_vnf_instance", "HEAL": "heal_vnf_instance"}[operation]),
            self.vnf_b.id, body, label=operation.lower())
        assert occ["operationState"] == "COMPLETED", (self.seed, body, occ.get("error"))
        return "%s %s" % (operation.lower(), body.get("type") or body.get("vnfcInstanceId"))

    def _heal_pod(self):
        info = self.vnf_b.instance()["instantiatedVnfInfo"]
        vnfc = self.rng.choice(sorted(v["id"] for v in info["vnfcInfo"]
                                      if v["vduId"] == REPLICAS))
        return self._vnf_b("HEAL", {"vnfcInstanceId": [vnfc]})

    def _migrate(self, server, host):
        self.cloud.live_migrate(server, host=host)
        return "%s to %s" % (server, host)

    def _restart(self):
        proc, _ = self.controller
        _kill(proc)
        self.restarts += 1
        self.controller = self.start("lifecycle-%d" % self.restarts)
        return "controller %d" % self.restarts

    def gauges(self):
        return _gauges(self.controller[1])

    def stop(self):
        _kill(self.controller[0])


def start_controller(cloud, cp, tmp_path, stack, timings):
    """START for ``Lifecycle``: the controller as its Deployment runs it for VNF-A
    (``--stack``, ``--aspect workerNode``), with TIMINGS."""
    def start(name):
        return _start(cloud, cp, tmp_path, name, "--lease-name", "lifecycle",
                      *timings.flags(), select=["--stack", stack, "--aspect", "workerNode"])
    return start


def settle(checker, events, timings, timeout):
    """Wait until the checker has sampled after the last event, and then until no evicted
    workload's violation is open, or every window has closed (at most TIMEOUT s): an
    open one is then judged whole."""
    ends = [e.end + w.window(e.kind, timings) for e in events]
    deadline = min(time.monotonic() + timeout, max(ends + [time.monotonic()]) + w.SAMPLE_S)
    last_event = max([e.end for e in events] + [0.0])
    while time.monotonic() < deadline:
        if checker.last > last_event and not any(
                not v.held and v.end is None for v in checker.violations()):
            return
        time.sleep(w.SAMPLE_S)


def settings(environ):
    """(seed, timings, events, budget s, report path or None) from ENVIRON: the CI's short
    sequence by default; ``benchmarks/bench_lifecycles.py`` sets the long one. The seed
    is drawn when not given, and always printed."""
    seed = environ.get("HWAFFINITY_LIFECYCLE_SEED")
    timings = {"short": w.SHORT, "shipped": w.SHIPPED}[
        environ.get("HWAFFINITY_LIFECYCLE_TIMINGS", "short")]
    return (int(seed) if seed else random.SystemRandom().randrange(1 << 32), timings,
            int(environ.get("HWAFFINITY_LIFECYCLE_EVENTS", "10")),
            float(environ.get("HWAFFINITY_LIFECYCLE_BUDGET_S", "240")),
            environ.get("HWAFFINITY_LIFECYCLE_REPORT"))
