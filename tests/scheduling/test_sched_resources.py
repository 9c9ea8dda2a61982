"""Generic resources in NodeResourcesFit, request sums, and the notes on what is not modelled."""
from tacker_hwaffinity.scheduling.model import PodSpecInfo

from tests.builders import container, node, pod
from .helpers import plan, run


SHORT = ["Insufficient hugepages-1Gi", "Insufficient intel.com/sriov_net"]


def test_extended_resources_and_hugepages_filter_with_upstream_reasons():
    nodes = [node("sriov", alloc={"cpu": "8", "memory": "8Gi", "pods": "10",
                                  "intel.com/sriov_net": "2", "hugepages-1Gi": "4Gi"}),
             node("plain", alloc={"cpu": "8", "memory": "8Gi", "pods": "10"}),
             node("unknown")]  # no allocatable at all: not checked
    want = container(limits={"intel.com/sriov_net": "1", "hugepages-1Gi": "2Gi", "cpu": "1",
                             "memory": "1Gi"})
    r = run(nodes, pod("upf", containers=[want]))
    assert r["sriov"]["feasible"] and r["unknown"]["feasible"]
    assert r["plain"]["reasons"] == SHORT
    busy = [pod("b%d" % i, on="sriov", containers=[want]) for i in range(2)]
    r = run(nodes[:2], pod("upf", containers=[want]), busy)
    assert r["sriov"]["reasons"] == SHORT
    assert r[None]["summary"] == ("0/2 nodes are available: 2 Insufficient hugepages-1Gi, "
                                  "2 Insufficient intel.com/sriov_net.")


def test_ignored_resources_are_not_checked():
    nodes = [node("plain", alloc={"cpu": "8", "memory": "8Gi", "pods": "10"})]
    p = pod("x", containers=[container(requests={"example.com/foo": "1"})])
    assert not run(nodes, p)["plain"]["feasible"]
    from .helpers import config
    cfg = config(plugin_config=[{"name": "NodeResourcesFit",
                                 "args": {"ignoredResourceGroups": ["example.com"]}}])
    assert run(nodes, p, cfg=cfg)["plain"]["feasible"]


def test_requests_sum_containers_sidecars_init_and_overhead_per_resource():
    spec = PodSpecInfo({
        "containers": [container(requests={"cpu": "1", "example.com/a": "1"}),
                       container()],
        "initContainers": [container(requests={"cpu": "3"}),
                           container(requests={"example.com/a": "2"}, restartPolicy="Always")],
        "overhead": {"cpu": "100m"}})
    assert spec.requests["cpu"] == 3100 and spec.requests["example.com/a"] == 3
    # non-zero: a container without a cpu request counts 100m, the sidecar too; the
    # first init container runs before the sidecar starts
    assert spec.nonzero_requests["cpu"] == max(1000 + 100 + 100, 3000) + 100


def test_not_modelled_parts_of_a_pod_are_named_in_the_notes():
    volumes = [{"name": "d", "persistentVolumeClaim": {"claimName": "c"}},
               {"name": "cfg", "configMap": {"name": "m"}}]
    p = plan([node("a")], [pod("x", volumes=volumes, resourceClaims=[{"name": "gpu"}],
                               containers=[container(ports=[{"containerPort": 80,
                                                              "hostPort": 80}])])])
    text = " ".join(p.notes)
    assert "volumes (persistentVolumeClaim: VolumeBinding" in text and "configMap" not in text
    assert "resourceClaims (DynamicResources)" in text and "hostPort (NodePorts)" in text


def test_a_workload_s_not_modelled_parts_are_one_note_for_all_its_pods():
    """A 40-replica hostPort Deployment is one note, not forty."""
    hostport = [container(ports=[{"containerPort": 80, "hostPort": 80}])]
    web = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"name": "web", "namespace": "default"},
           "spec": {"replicas": 40, "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}},
                                 "spec": {"containers": hostport}}}}
    p = plan([node("a")], [web, pod("x", containers=hostport)])
    about = [n for n in p.notes if "hostPort (NodePorts)" in n]
    assert [n.split(" hostPort")[0] for n in about] == [
        "the pods of Deployment default/web use", "pod default/x uses"]


def test_unplaceable_pod_notes_preemption_and_not_missing_images():
    p = plan([node("a", alloc={"pods": "0"})], [pod("x")])
    assert not p.complete
    assert p.notes == ["pod default/x fits no node: kube-scheduler's DefaultPreemption would "
                       "then try to evict lower-priority pods to make room, which is not "
                       "modelled"]
    # no node lists status.images: ImageLocality scores 0 on every node, which changes no
    # node's rank, so nothing is said about it (#38)


def test_image_locality_prefers_the_node_holding_the_image():
    big = 500 * 1024 * 1024
    a = node("a")
    a["status"] = {"images": [{"names": ["registry/upf:1.0"], "sizeBytes": big}]}
    r = run([a, node("b")], pod("x", containers=[container(image="registry/upf:1.0")]))
    # 500 MiB on 1 of 2 nodes: 250 MiB, (250 - 23) / (1000 - 23) of 100
    assert r["a"]["scores"]["ImageLocality"] == 100 * (big // 2 - 23 * 2 ** 20) // (977 * 2 ** 20)
    assert r["b"]["scores"]["ImageLocality"] == 0
    assert not any("status.images" in n for n in r[None]["notes"])
