"""The seed's story through a real Tacker: VNF-B (the CNF) on the cluster VNF-A built,
through Tacker's Kubernetes infra drivers, v2 then v1.

Where doc/user-guide.md shows a step, the step is the guide's commands (``openstack``,
``kubectl``, ``hwaffinity``), run as shown and their outputs checked against the page
(``guide.py``); the rest goes through python-tackerclient's API. VNF-A is onboarded and
instantiated through v2 (BaseHOT flavour, the workers' group soft-anti-affinity):
three workers on three compute hosts, each node labelled ``CIS-node=<host>`` by our
MgmtDriver. The cluster is registered as a Kubernetes VIM the way a user does
(``openstack vim register``: the API server's endpoint, a ServiceAccount token and its
CA; Tacker keeps the VIM's key in Barbican).
Then VNF-B, onboarded from ``csar/cnf``, goes through its life with the sample requests
(``samples/requests/cnf``), naming that VIM by its id alone:

1. v2 instantiate: per workload, the pods land on the compute hosts exactly as
   ``hwaffinity plan`` predicted from a snapshot taken before; VNF-A heals a worker
   (the new server on the free host): the upf replica it carried follows its node;
2. with the controller running (``--stack``, as its Deployment runs): a worker
   live-migrated to the free host is relabelled, its upf replica stays, the audit and the
   gauges agree; live-migrated onto another worker's host (VNF-A's workers are in a
   soft-anti-affinity group, as the guide chooses), it is relabelled, the audit and the
   gauges see udr's two replicas there, and the controller evicts the co-located upf
   replica (RequiredDuringExecution), Pending until the worker is migrated back to a
   free host, where it lands;
3. scale upf out beyond the hosts: the fourth replica stays Pending (required
   anti-affinity), and Tacker reports FAILED_TEMP with its timeout error;
4. VNF-A scales out: a fourth worker on the fourth host, labelled; the Pending
   replica lands there, and a retry of VNF-B's scale completes;
5. scale smf out (preferred anti-affinity): the new replicas go to the hosts without
   one (the heal's drain left smf on two hosts; nothing rebalances), evenly;
6. heal one upf pod: its replacement lands on the host it left (the only free one);
7. terminate: nothing is left;
8. v1 (``vimType: kubernetes``), the same package: instantiate, scale upf out to the
   fourth host, heal a pod, terminate (Tacker runs with the kubernetes client before
   37: ``tackerharness.py``);
9. a random lifecycle (``lifecycles.py``): another VNF-B instance, and a seeded
   sequence of events on both VNFs while the controller runs and a checker reads
   Nova's truth every second; no two replicas of upf or udr share a physical host
   outside the windows ``windows.py`` documents;
10. terminate VNF-A.

The shared control plane also holds other tests' nodes; they are cordoned and lose
their host label for this module, so the cluster is VNF-A's nodes alone, as it is for
a user (the master's node carries kubeadm's NoSchedule taint: ``kubelets.py``). The
tests run in this order and share the instances; each needs the one before.
"""
import collections
import json
import os
import subprocess
import time

import pytest
import yaml

from controlplane import harness
from controlplane import workloads as w
from controlplane.test_audit_e2e import _stale_nodes, _wait_gauges, audit
from controlplane.test_controller_e2e import _kill, _start, label
from controlplane.test_plan_vs_scheduler import run_plan
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL

from . import lcm, lifecycles, windows
from .packages import ROOT
from .vnf import HOST, Vnf

pytestmark = [pytest.mark.tacker, pytest.mark.openstack, pytest.mark.controlplane,
              pytest.mark.ssh]

CNF_REQUESTS = os.path.join(ROOT, "samples", "requests", "cnf")
SOFT = "soft-anti-affinity"
NAMESPACE, NAMESPACE_V1 = "cnf", "cnf-v1"    # v2: the sample request's
NAMESPACE_LIFECYCLE = "cnf-lifecycle"


def request(name, api="v2", **changes):
    """The sample request NAME of VNF-B for API (v1 or v2), with CHANGES."""
    with open(os.path.join(CNF_REQUESTS, api, name)) as f:
        body = json.load(f)
    body.update(changes)
    return body


@pytest.fixture(scope="module")
def cluster(v2, vnf_a_onboarded, guide, tacker_cloud, master, kubelets, control_plane):
    """VNF-A, instantiated as the user guide does it, with the sample requests holding
    the harness's values (``instantiate-vnf-a.json``, and ``vnf-a-params.json`` for the
    scale); the other nodes of the control plane cordoned meanwhile."""
    state, pkg, _ = vnf_a_onboarded
    assert state == "ONBOARDED", pkg
    lcm.ensure_keypair(tacker_cloud)
    master.start()
    vnf_a = Vnf(v2, 2, tacker_cloud, master, kubelets)
    instantiate = vnf_a.request("instantiate_podaffinity_v2.json")
    # the guide's choice: workers that may share a host when one is moved (section 9)
    instantiate["additionalParams"]["nfv"]["VDU"]["workerNode"]["server_group_policy"] = \
        SOFT
    # and the MgmtDriver spreads what the soft group's creation race put on one host
    instantiate["additionalParams"]["hwaffinity_param"]["on_colocation"] = "respread"
    for name, body in (("instantiate-vnf-a.json", instantiate),
                       ("vnf-a-params.json", {"additionalParams": vnf_a.request(
                           "scale_out_workers.json")["additionalParams"]})):
        with open(os.path.join(guide.workdir, name), "w") as f:
            json.dump(body, f, indent=2)
    guide.check_file("instantiate-vnf-a.json")
    guide.check_file("vnf-a-params.json")
    cp = control_plane
    # {node: (cordoned, its CIS-node or None)} of the other tests' nodes: cordoned, and
    # without the host label, since kube-scheduler 1.20's topology spread counts the
    # domains of cordoned nodes too (amf's maxSkew would leave replicas Pending)
    others = {n["metadata"]["name"]: (bool(n["spec"].get("unschedulable")),
                                      (n["metadata"].get("labels") or {}).get(
                                          DEFAULT_HOST_LABEL))
              for n in cp.admin.get("/api/v1/nodes")["items"]}
    for name in others:
        cp.admin.patch("/api/v1/nodes/" + name, {"spec": {"unschedulable": True},
                                                 "metadata": {"labels": {
                                                     DEFAULT_HOST_LABEL: None}}})
    try:
        vnf_a.id = guide.run("instantiate-vnf-a", each=kubelets.sync)["VNF_A"]
        vnf_a.seconds["instantiate"] = guide.seconds["instantiate-vnf-a"]
        vnf_a.assert_labelled("instantiate_end")
        assert vnf_a.worker_group().policy == SOFT
        guide.env["KUBECONFIG"] = cp.kubeconfig
        guide.run("labels")
        yield vnf_a
    finally:
        for name, (cordoned, host) in others.items():
            cp.admin.request("PATCH", "/api/v1/nodes/" + name,
                             {"spec": {"unschedulable": cordoned or None},
                              "metadata": {"labels": {DEFAULT_HOST_LABEL: host}}},
                             content_type="application/merge-patch+json", ok=(200, 404))
        print("VNF-A LCM (s): " + ", ".join("%s %.1f" % kv for kv in vnf_a.seconds.items()))


@pytest.fixture(scope="module")
def kubernetes_vim(cluster, guide, v1_client, barbican):
    """The cluster registered as the default Kubernetes VIM (its key in Barbican), as the
    user guide does it: v1 creates no VNF instance without a default VIM ("Default VIM
    is not defined"). The VIM's ServiceAccount goes with it."""
    account = guide.write("tacker-vim-account.yaml")
    guide.run("vim-credentials")
    guide.write("vim-config.yaml")
    vim = v1_client.show_vim(guide.run("register-vim")["VIM"])["vim"]
    yield vim
    v1_client.delete_vim(vim["id"])
    # (the token controller deletes the Secret with its ServiceAccount)
    subprocess.run(["kubectl", "delete", "--ignore-not-found", "-f", account], env=guide.env,
                   check=True, capture_output=True, timeout=60)


@pytest.fixture(scope="module")
def vnf_b_package(packages_client, guide):
    pkg = packages_client.show_vnf_package(guide.run("onboard-vnf-b")["VNF_B_PACKAGE"])
    assert pkg["onboardingState"] == "ONBOARDED", pkg
    return pkg


@pytest.fixture(scope="module")
def vnf_b(v2, guide, vnf_b_package, tacker_cloud, master, kubelets):
    """VNF-B through v2, as the user guide makes it (its id once instantiated); its
    operations' times printed at the end."""
    life = Vnf(v2, 2, tacker_cloud, master, kubelets)
    yield life
    life.seconds.update((step, guide.seconds[step]) for step in (
        "instantiate-vnf-b", "scale-upf-fails", "retry-scale-upf", "heal-pod",
        "terminate-vnf-b") if step in guide.seconds)
    print("vnf-b LCM (s): " + ", ".join("%s %.1f" % kv for kv in life.seconds.items()))


@pytest.fixture(scope="module")
def vnf_b_v1(v1_client, vnf_b_package, tacker_cloud, master, kubelets, control_plane):
    """VNF-B through v1, into NAMESPACE_V1 (made now: Tacker does not make it)."""
    control_plane.create_namespace(NAMESPACE_V1)
    life = Vnf(v1_client, 1, tacker_cloud, master, kubelets)
    life.id = v1_client.create_vnf_instance({"vnfdId": vnf_b_package["vnfdId"],
                                             "vnfInstanceName": "vnf-b-v1"})["id"]
    yield life
    print("vnf-b-v1 LCM (s): " + ", ".join("%s %.1f" % kv for kv in life.seconds.items()))


def host_of_nodes(cp):
    """{node: CIS-node} of the schedulable labelled nodes."""
    return {n["metadata"]["name"]: n["metadata"]["labels"][DEFAULT_HOST_LABEL]
            for n in cp.admin.get("/api/v1/nodes")["items"]
            if DEFAULT_HOST_LABEL in (n["metadata"].get("labels") or {})
            and not n["spec"].get("unschedulable")}


def placement(cp, name, count, pending=0, timeout=90, namespace=NAMESPACE):
    """({host: pods}, [pending], pods) of workload NAME once it has COUNT pods of which
    PENDING are unbound (kube-scheduler retries an unschedulable pod after a node
    change with a backoff: wait for the outcome, do not sample it)."""
    def settled():
        pods = [p for p in cp.pods(namespace, "app.kubernetes.io/name=%s" % name)
                if not p["metadata"].get("deletionTimestamp")]
        unbound = [p for p in pods if not p["spec"].get("nodeName")]
        return pods if len(pods) == count and len(unbound) == pending else None
    pods = harness.wait_until(settled, timeout, what="%d %s pods, %d unbound" % (
        count, name, pending))
    return w.domains_of(pods, host_of_nodes(cp)) + (pods,)


def manifests(tmp_path):
    """VNF-B's manifests as Tacker creates them (namespace set), one file each."""
    files = []
    for i, rel in enumerate(request("instantiate.json")["additionalParams"][
            "lcm-kubernetes-def-files"]):
        with open(os.path.join(ROOT, "csar", "cnf", rel)) as f:
            docs = [d for d in yaml.safe_load_all(f) if d]
        for j, d in enumerate(docs):
            d["metadata"]["namespace"] = NAMESPACE
            path = tmp_path / ("%02d-%02d-%s.yaml" % (i, j, d["metadata"]["name"]))
            path.write_text(yaml.safe_dump(d, sort_keys=False))
            files.append(str(path))
    return files


def test_instantiate_puts_the_pods_where_plan_said(cluster, vnf_b, kubernetes_vim, guide,
                                                  control_plane, tmp_path):
    cp = control_plane
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(cp.snapshot_yaml())
    # the plan's exit code also counts other tests' Pending pods of the shared cluster
    _, result = run_plan(str(snapshot), manifests(tmp_path))
    plan_counts, _, plan_pending = w.plan_by_workload(result, NAMESPACE)
    assert plan_pending == [], result

    vnf_b.id = guide.run("instantiate-vnf-b")["VNF_B"]

    hosts = sorted(set(host_of_nodes(cp).values()))
    assert len(hosts) == 3
    real = {}
    for name, replicas in (("upf", 3), ("udr", 3), ("smf", 6), ("amf", 6)):
        counts, pending, _ = placement(cp, name, replicas)
        assert pending == [], (name, pending)
        real[name] = counts
    assert real["upf"] == real["udr"] == {h: 1 for h in hosts}, real
    assert real == plan_counts, (real, plan_counts)
    vnfcs = vnf_b.instance()["instantiatedVnfInfo"]["vnfcResourceInfo"]
    assert collections.Counter(v["vduId"] for v in vnfcs) == {
        "upf": 3, "udr": 3, "smf": 6, "amf": 6}
    guide.run("placement")


def test_heal_of_a_worker_keeps_the_spread(cluster, vnf_b, guide, kubelets, control_plane):
    """VNF-A heals a worker: the MgmtDriver drains its node (its upf replica goes
    Pending: the other workers' hosts have one), Heat creates the new server before it
    deletes the old one, so the server group puts it on the free fourth host; its node
    is labelled with that host and uncordoned, and the replica lands there: one upf a
    host again. (With a worker on every host, the heal is Nova's "No valid host".)"""
    cp = control_plane
    before = cluster.workers()
    assert guide.run("heal-worker", each=kubelets.sync)["WORKER_VNFC"] == sorted(before)[0]
    cluster.seconds["heal"] = guide.seconds["heal-worker"]
    assert len(cluster.assert_labelled("heal_end")) == 3
    counts, pending, _ = placement(cp, "upf", 3)
    assert pending == [] and len(counts) == 3 and set(counts.values()) == {1}, counts


def _gauge(gauges, metric, name, kind="Deployment"):
    return gauges.get((metric, (("kind", kind), ("name", name), ("namespace", NAMESPACE))))


def _workload_in(doc, name, kind="Deployment"):
    (found,) = [x for x in doc["workloads"]
                if (x["namespace"], x["kind"], x["name"]) == (NAMESPACE, kind, name)]
    return found


def test_with_the_controller_labels_follow_live_migrations_and_a_colocated_replica_moves(
        cluster, vnf_b, guide, tacker_cloud, control_plane, tmp_path):
    """The controller runs as its Deployment would, on VNF-A's workers (``--stack``,
    ``--aspect workerNode``).

    1. A worker live-migrated to the free host: its node is relabelled, its upf replica
       stays (one a host still), the audit finds no stale label, the gauges say upf's
       intent is met.
    2. The same worker live-migrated onto another worker's host (the workers' group is
       soft-anti-affinity, so Nova lets it): its node is relabelled with that host. upf
       carries its required anti-affinity as RequiredDuringExecution too: the controller
       evicts the moved node's upf replica, whose replacement waits Pending (both
       labelled hosts have one). udr declares the required term only: its two replicas
       on that host stay, and the audit and the gauges report its intent violated.
    3. The worker live-migrated back to a free host: relabelled; the Pending upf replica
       lands there, and the audit and the gauges say every intent is met again.
    """
    cp = control_plane
    nova = tacker_cloud.nova("admin", version="latest")
    workers = {cluster.node_name(s): s for s in cluster.workers().values()}
    hosts = {n: getattr(nova.servers.get(s), HOST) for n, s in workers.items()}
    (free,) = set(tacker_cloud.hosts) - set(hosts.values())
    stack = guide.run("vnf-a-stack")["STACK"]
    assert [st.id for st in tacker_cloud.heat("admin").stacks.list()
            if cluster.id in st.stack_name] == [stack]
    proc, log = _start(tacker_cloud, cp, tmp_path, "story", "--lease-name", "story",
                       select=["--stack", stack, "--aspect", "workerNode"])
    try:
        _wait_gauges(log, "the controller's gauges", lambda g: _gauge(
            g, "hwaffinity_workload_intent_met", "upf") == 1)
        _, _, pods = placement(cp, "upf", 3)
        moving, onto_node, third = sorted(workers)
        (replica,) = [p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == moving]

        # 1. to the free host
        guide.values.update(WORKER_SERVER=workers[moving], FREE_HOST=free, WORKER_NODE=moving)
        guide.run("live-migration")
        harness.wait_until(lambda: label(cp, moving) == free, 30,
                           what="node %s relabelled %s" % (moving, free))
        g = _wait_gauges(log, "the gauges after the move", lambda g: _gauge(
            g, "hwaffinity_workload_intent_met", "upf") == 1 and g.get(
            ("hwaffinity_node_label_stale", (("node", moving),))) == 0)
        assert _gauge(g, "hwaffinity_workload_replicas_on_busiest_host", "upf") == 1
        counts, pending, pods = placement(cp, "upf", 3)
        assert pending == [] and set(counts.values()) == {1} and free in counts, counts
        assert replica in [p["metadata"]["name"] for p in pods]       # nothing evicted
        status, out, _ = audit(tacker_cloud, cp, "-o", "json", "--fail-on", "stale-labels")
        doc = json.loads(out)
        assert status == 0 and not set(_stale_nodes(doc)) & set(workers), doc["staleLabels"]
        assert (_workload_in(doc, "upf")["worstLoss"], _workload_in(doc, "upf")["intentMet"]) \
            == (1, True)
        guide.run("after-migration")

        # 2. onto another worker's host
        onto = hosts[onto_node]
        guide.values.update(WORKER_HOST=onto, ONTO_NODE=onto_node)
        guide.run("colocate")
        harness.wait_until(lambda: label(cp, moving) == onto, 30,
                           what="node %s relabelled %s" % (moving, onto))
        counts, pending, pods = placement(cp, "upf", 3, pending=1)
        assert counts == {onto: 1, hosts[third]: 1}, counts
        assert replica not in [p["metadata"]["name"] for p in pods]
        # (the replacement can be there before the controller's Event and the scheduler's)
        (evicted,) = harness.wait_until(lambda: cp.events(
            NAMESPACE, reason="EvictedDuringExecution"), 30, what="the eviction's Event")
        assert evicted["involvedObject"]["name"] == replica, evicted
        harness.wait_until(lambda: any(
            "didn't match pod anti-affinity rules" in e["message"] for e in cp.events(
                NAMESPACE, reason="FailedScheduling", name=pending[0])), 30,
            what="the Pending replica's FailedScheduling Event (anti-affinity)")
        udr, _, _ = placement(cp, "udr", 3)
        assert udr == {onto: 2, hosts[third]: 1}, udr
        # (udr's is unmet from the relabel on, upf's again once its replica is evicted)
        g = _wait_gauges(log, "the gauges with two workers on one host", lambda g: _gauge(
            g, "hwaffinity_workload_intent_met", "udr", "StatefulSet") == 0 and _gauge(
            g, "hwaffinity_workload_intent_met", "upf") == 1)
        assert _gauge(g, "hwaffinity_workload_replicas_on_busiest_host", "udr",
                      "StatefulSet") == 2
        status, out, _ = audit(tacker_cloud, cp, "-o", "json", "--fail-on", "intent-unmet")
        doc = json.loads(out)
        assert status == 1 and not _stale_nodes(doc), doc["staleLabels"]
        assert (_workload_in(doc, "udr", "StatefulSet")["worstLoss"],
                _workload_in(doc, "udr", "StatefulSet")["intentMet"]) == (2, False)
        guide.run("after-colocation")

        # 3. back to a free host
        back = sorted(set(tacker_cloud.hosts) - {onto, hosts[third]})[0]
        guide.values.update(BACK_HOST=back)
        guide.run("migrate-back")
        harness.wait_until(lambda: label(cp, moving) == back, 30,
                           what="node %s relabelled %s" % (moving, back))
        counts, pending, _ = placement(cp, "upf", 3)
        assert pending == [] and set(counts.values()) == {1} and back in counts, counts
        _wait_gauges(log, "every intent met again", lambda g: all(
            _gauge(g, "hwaffinity_workload_intent_met", *w) == 1
            for w in (("upf",), ("udr", "StatefulSet"))))
        status, out, _ = audit(tacker_cloud, cp, "-o", "json", "--fail-on", "stale-labels")
        doc = json.loads(out)
        assert status == 0 and not _stale_nodes(doc), doc["staleLabels"]
        assert [_workload_in(doc, *w)["intentMet"] for w in (
            ("upf",), ("udr", "StatefulSet"), ("amf",))] == [True] * 3
        guide.run("after-migrate-back")
        assert proc.poll() is None
    finally:
        _kill(proc)


def test_scale_out_beyond_the_hosts_fails_with_the_replica_pending(vnf_b, guide,
                                                                  control_plane):
    cp = control_plane
    occ = vnf_b.client.show_vnf_lcm_op_occs(guide.run("scale-upf-fails")["SCALE_OP"])
    assert occ["operationState"] == "FAILED_TEMP", occ
    assert occ["error"]["status"] == 422, occ["error"]
    assert occ["error"]["detail"] == ("Kubernetes operation did not complete within the "
                                      "timeout period."), occ["error"]
    counts, pending, _ = placement(cp, "upf", 4, pending=1)
    assert len(pending) == 1 and sorted(counts.values()) == [1, 1, 1], (counts, pending)
    why = [e["message"] for e in cp.events(NAMESPACE, reason="FailedScheduling",
                                           name=pending[0])]
    assert any("didn't match pod anti-affinity rules" in m for m in why), why


def test_a_fourth_worker_takes_the_pending_replica_and_the_retry_completes(
        cluster, vnf_b, guide, kubelets, control_plane):
    cp = control_plane
    guide.run("scale-vnf-a", each=kubelets.sync)
    cluster.seconds["scale out"] = guide.seconds["scale-vnf-a"]
    assert len(cluster.assert_labelled("scale_end")) == 4
    counts, pending, _ = placement(cp, "upf", 4)
    assert pending == [] and len(counts) == 4 and set(counts.values()) == {1}, counts
    guide.run("retry-scale-upf")


def test_scale_out_with_preferred_anti_affinity_fills_the_least_loaded_host(
        vnf_b, control_plane):
    """The worker heal above moved the smf replicas of its node to the other hosts (the
    drain), and nothing moves them back: the new replicas go to the hosts that have
    none, and nothing lands where smf already is."""
    cp = control_plane
    before, _, _ = placement(cp, "smf", 6)
    empty = set(host_of_nodes(cp).values()) - set(before)
    assert empty, before
    occ = vnf_b.run("SCALE", vnf_b.client.scale_vnf_instance, vnf_b.id,
                    request("scale_out_smf.json"), label="smf scale out")
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    after, pending, _ = placement(cp, "smf", 9)
    assert pending == []
    assert {h: after.get(h) for h in before} == before, (before, after)
    filled = [after.get(h, 0) for h in empty]
    assert sum(filled) == 3 and max(filled) - min(filled) <= 1, (before, after)


def test_heal_of_a_pod_puts_its_replacement_on_the_host_it_left(vnf_b, guide,
                                                                control_plane):
    cp = control_plane
    nodes = host_of_nodes(cp)
    _, _, pods = placement(cp, "upf", 4)
    before = {p["metadata"]["name"]: nodes[p["spec"]["nodeName"]] for p in pods}
    guide.run("heal-pod")
    counts, pending, pods = placement(cp, "upf", 4)
    assert pending == [] and set(counts.values()) == {1}, counts
    after = {p["metadata"]["name"]: nodes[p["spec"]["nodeName"]] for p in pods}
    (gone,), (replacement,) = set(before) - set(after), set(after) - set(before)
    assert after[replacement] == before[gone]


def test_terminate_leaves_nothing_behind(vnf_b, guide, control_plane):
    # with the kubernetes client 37 in Tacker's Python, this is FAILED_TEMP once per
    # Service on a cluster before 1.23 (doc/packages.md); 36, as the harness runs, reads
    # the Status kube-apiserver answers a Service's DELETE with
    guide.run("terminate-vnf-b")
    harness.wait_until(lambda: not left_in(control_plane, NAMESPACE), 60,
                       what="VNF-B's objects to go")


def left_in(cp, namespace):
    """(kind, name) of VNF-B's kinds of object left in NAMESPACE."""
    return [(kind, o["metadata"]["name"]) for kind, path in (
        ("Deployment", "/apis/apps/v1/namespaces/%s/deployments"),
        ("StatefulSet", "/apis/apps/v1/namespaces/%s/statefulsets"),
        ("Service", "/api/v1/namespaces/%s/services"),
        ("Pod", "/api/v1/namespaces/%s/pods"))
        for o in cp.admin.get(path % namespace)["items"]]


def test_v1_instantiate_scale_heal_terminate(cluster, vnf_b_v1, kubernetes_vim,
                                             control_plane):
    """The same package through v1 (``vimType: kubernetes``), on the four hosts: one
    upf a host, the fourth by a scale-out; a healed pod back on its host."""
    cp = control_plane
    body = request("instantiate.json", "v1")
    body["vimConnectionInfo"][0]["vimId"] = kubernetes_vim["id"]
    body["additionalParams"]["namespace"] = NAMESPACE_V1
    occ = vnf_b_v1.run("INSTANTIATE", vnf_b_v1.client.instantiate_vnf_instance, vnf_b_v1.id,
                       body)
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    counts, pending, _ = placement(cp, "upf", 3, namespace=NAMESPACE_V1)
    assert pending == [] and sorted(counts.values()) == [1, 1, 1], counts
    occ = vnf_b_v1.run("SCALE", vnf_b_v1.client.scale_vnf_instance, vnf_b_v1.id,
                       request("scale_out_upf.json", "v1"), label="upf scale out")
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    counts, pending, pods = placement(cp, "upf", 4, namespace=NAMESPACE_V1)
    assert pending == [] and len(counts) == 4 and set(counts.values()) == {1}, counts

    info = vnf_b_v1.instance()["instantiatedVnfInfo"]
    vnfc = next(v for v in info["vnfcResourceInfo"] if v["vduId"] == "upf")
    pod = vnfc["computeResource"]["resourceId"]
    nodes = host_of_nodes(cp)
    host = next(nodes[p["spec"]["nodeName"]] for p in pods if p["metadata"]["name"] == pod)
    occ = vnf_b_v1.run("HEAL", vnf_b_v1.client.heal_vnf_instance, vnf_b_v1.id,
                       request("heal_pod.json", "v1", vnfcInstanceId=[vnfc["id"]]))
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    counts, pending, pods = placement(cp, "upf", 4, namespace=NAMESPACE_V1)
    assert pending == [] and set(counts.values()) == {1}, counts
    (replacement,) = [p for p in pods if p["metadata"]["name"] not in {
        v["computeResource"]["resourceId"] for v in info["vnfcResourceInfo"]}]
    assert nodes[replacement["spec"]["nodeName"]] == host

    occ = vnf_b_v1.run("TERMINATE", vnf_b_v1.client.terminate_vnf_instance, vnf_b_v1.id,
                       request("terminate.json", "v1"))
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    harness.wait_until(lambda: not left_in(cp, NAMESPACE_V1), 60,
                       what="VNF-B's (v1) objects to go")
    lcm.start_operation(vnf_b_v1.client.delete_vnf_instance, vnf_b_v1.id)


@pytest.fixture
def vnf_b_lifecycle(v2, vnf_b_package, kubernetes_vim, tacker_cloud, master, kubelets,
                    control_plane):
    """Another VNF-B instance through v2, in NAMESPACE_LIFECYCLE; terminated and deleted
    afterwards, nothing of it left."""
    control_plane.create_namespace(NAMESPACE_LIFECYCLE)
    life = Vnf(v2, 2, tacker_cloud, master, kubelets)
    life.id = v2.create_vnf_instance({"vnfdId": vnf_b_package["vnfdId"],
                                      "vnfInstanceName": "vnf-b-lifecycle"})["id"]
    body = request("instantiate.json")
    body["vimConnectionInfo"]["vim1"]["vimId"] = kubernetes_vim["id"]
    body["additionalParams"]["namespace"] = NAMESPACE_LIFECYCLE
    occ = life.run("INSTANTIATE", v2.instantiate_vnf_instance, life.id, body)
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    yield life
    occ = life.run("TERMINATE", v2.terminate_vnf_instance, life.id, request("terminate.json"))
    assert occ["operationState"] == "COMPLETED", occ.get("error")
    harness.wait_until(lambda: not left_in(control_plane, NAMESPACE_LIFECYCLE), 60,
                       what="the lifecycle's VNF-B objects to go")
    lcm.start_operation(v2.delete_vnf_instance, life.id)
    control_plane.delete_namespace(NAMESPACE_LIFECYCLE)


def test_random_lifecycles_keep_one_replica_a_host(cluster, vnf_b_lifecycle, tacker_cloud,
                                                   kubelets, control_plane, tmp_path):
    """A seeded random sequence of events (``lifecycles.py``: VNF-A scale-out and
    scale-in, a worker's heal, live migrations to a free host and onto a worker's host,
    VNF-B scale-out and scale-in, a pod's heal, a controller restart) while the
    controller runs and a checker reads Nova's truth every second. No two replicas of
    upf (RequiredDuringExecution) share a physical host outside the windows of
    ``windows.py``; udr's (IgnoredDuringExecution) colocations begin only inside one and
    are alerted by the controller's gauge in time. The seed is printed; set
    ``HWAFFINITY_LIFECYCLE_SEED`` to replay it (``lifecycles.settings``: the sequence's
    length, budget and timings)."""
    seed, timings, events, budget, report = lifecycles.settings(os.environ)
    print("\nlifecycle seed %d (HWAFFINITY_LIFECYCLE_SEED=%d replays it), timings %s, "
          "at most %d events in %.0f s" % (seed, seed, timings, events, budget))
    cp = control_plane
    (stack,) = [st.id for st in tacker_cloud.heat("admin").stacks.list()
                if cluster.id in st.stack_name]
    life = lifecycles.Lifecycle(
        seed, timings, cluster, vnf_b_lifecycle, tacker_cloud, cp, NAMESPACE_LIFECYCLE,
        request, lifecycles.start_controller(tacker_cloud, cp, tmp_path, stack, timings))
    checker = lifecycles.Checker(tacker_cloud, cp, NAMESPACE_LIFECYCLE, kubelets.node_name,
                                 life.gauges)
    checker.start()
    try:
        life.run(events, budget)
        lifecycles.settle(checker, life.events, timings, timeout=windows.window(
            windows.MIGRATE_OCCUPIED, timings) + windows.window(
            windows.RESTART_CONTROLLER, timings))
    finally:
        checker.stop()
        life.stop()
    judged = windows.judge(life.events, checker.violations(), timings, time.monotonic())
    rows = windows.table(life.events, judged)
    print(windows.markdown(rows, timings))
    print("%d samples; the longest gap between two: %.1f s (bound %.0f s)" % (
        checker.samples, checker.longest_gap, windows.longest_gap_bound(timings)))
    if report:
        with open(report, "w") as f:
            json.dump({"seed": seed, "timings": timings.__dict__,
                       "samples": checker.samples, "errors": dict(checker.errors),
                       "longest_gap": checker.longest_gap,
                       "events": [e.__dict__ for e in life.events],
                       "judged": [dict(j.violation.__dict__, kind=j.kind, inside=j.inside,
                                       seconds=j.seconds, why=j.why) for j in judged],
                       "table": windows.markdown(rows, timings)}, f, indent=2)
    assert life.events and checker.samples, (seed, checker.errors)
    # continuous: no gap between two samples as long as the shortest window
    assert checker.longest_gap < windows.longest_gap_bound(timings), (
        seed, checker.longest_gap, checker.errors)
    assert [(j.violation.workload, j.violation.host, j.why) for j in judged
            if not j.inside] == [], "seed %d" % seed


def test_terminate_vnf_a(cluster, guide):
    """Terminate leaves nothing of VNF-A in OpenStack: no stack, and none of the servers
    and server groups its stack made (Heat deletes them with the stack; a resource it
    failed to delete would outlive the stack's record)."""
    made = cluster.made()
    guide.run("terminate-vnf-a")
    cluster.assert_nothing_left(made)
