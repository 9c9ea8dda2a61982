"""VNF-B (csar/cnf): the manifests, the VNFD and the instantiate requests.

* Every manifest is valid for the ``kubernetes`` client models (kubernetes
  37): deserialised into its model and serialised back unchanged, so no
  field is unknown, misspelt or of the wrong type.
* Tacker's own readers take the files the requests list: v1's
  ``Transformer`` (the kinds it can create) and v2's
  ``get_k8s_reses_from_json_files`` (which silently drops kinds it does not
  know: none may be dropped).
* The VNFD's VDUs are the workloads (names, replica counts of the default
  instantiation level, scaling aspects), as Tacker 16.0.0 reads them.
* What a careful operator writes: requests, memory limits, probes, security
  context, a PodDisruptionBudget selecting each workload's pods, and no
  surge pod for a workload with one replica per host.
"""
import copy
import json
import os

import pytest

from .pkgtools import CNF, load_yaml, load_yaml_all
from .pkgtools import CNF_PDB_FILE as PDB_FILE
from .pkgtools import CNF_REQUESTS as REQUESTS
from .pkgtools import CNF_WORKLOADS as WORKLOADS
from .pkgtools import cnf_request as request

K8S = os.path.join(CNF, "Files", "kubernetes")
HOST_KEY = "CIS-node"


def manifest_files():
    return sorted(f for f in os.listdir(K8S) if f.endswith(".yaml"))


def documents():
    """[(file, document)] of every manifest."""
    return [(f, d) for f in manifest_files() for d in load_yaml_all(os.path.join(K8S, f))]


def workloads():
    return {d["metadata"]["name"]: d for _, d in documents()
            if d["kind"] in ("Deployment", "StatefulSet")}


def flavour():
    return load_yaml(os.path.join(CNF, "Definitions", "hwaffinity_cnf_df_simple.yaml"))


def _model_name(doc):
    group_version = doc["apiVersion"].split("/")[-1]
    return group_version.capitalize() + doc["kind"]


# --------------------------------------------------------------------------
# Kubernetes client models


@pytest.mark.parametrize("index", range(len(documents())),
                         ids=["%s:%s" % (f, d["metadata"]["name"]) for f, d in documents()])
def test_manifest_round_trips_through_the_kubernetes_model(index):
    from kubernetes import client
    _, doc = documents()[index]
    api = client.ApiClient()
    model = getattr(client, _model_name(doc))
    obj = api._ApiClient__deserialize(copy.deepcopy(doc), model.__name__)
    assert isinstance(obj, model)
    assert api.sanitize_for_serialization(obj) == doc


def test_model_round_trip_catches_a_misspelt_field():
    """Negative control: the models drop an unknown field, so the round trip differs."""
    from kubernetes import client
    doc = copy.deepcopy(workloads()["upf"])
    doc["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"][
        "requiredDuringSchedulingIgnoredDuringExcecution"] = []
    api = client.ApiClient()
    obj = api._ApiClient__deserialize(copy.deepcopy(doc), "V1Deployment")
    assert api.sanitize_for_serialization(obj) != doc


# --------------------------------------------------------------------------
# Tacker's readers


def test_requests_list_every_workload_and_no_disruption_budget():
    for api in REQUESTS:
        ap = request(api)["additionalParams"]
        files = ap["lcm-kubernetes-def-files"]
        assert PDB_FILE not in files
        listed = {d["metadata"]["name"] for f in files
                  for d in load_yaml_all(os.path.join(CNF, f))
                  if d["kind"] in ("Deployment", "StatefulSet")}
        assert listed == set(WORKLOADS)
        # Tacker sets every object's namespace; the manifests leave it open
        assert ap["namespace"] == "cnf"
    for _, doc in documents():
        assert "namespace" not in doc["metadata"]


def test_tacker_v1_can_create_every_listed_kind():
    """Tacker v1's Transformer creates objects with a per-kind client call
    (``method_value``) in a fixed kind order. (It cannot build objects with
    the kubernetes 37 client in this venv: its pydantic models refuse the
    ``local_vars_configuration`` Tacker 16.0.0 passes, a Tacker/client
    incompatibility outside this package; so the kinds are checked here.)"""
    from tacker.vnfm.infra_drivers.kubernetes.k8s import translate_outputs
    transformer = translate_outputs.Transformer(None, None, None, None)
    files = request("v1")["additionalParams"]["lcm-kubernetes-def-files"]
    docs = [d for f in files for d in load_yaml_all(os.path.join(CNF, f))]
    kinds = [d["kind"] for d in docs]
    assert sorted(kinds) == sorted(["Service"] * 4 + ["Deployment"] * 3 + ["StatefulSet"])
    for kind in kinds:
        assert kind in transformer.method_value, kind
    order = transformer.RESOURCE_CREATION_ORDER
    ordered = [d["metadata"]["name"] for d in sorted(
        (d for d in docs if d["kind"] != "Service"), key=lambda d: order.index(d["kind"]))]
    assert ordered == ["udr", "upf", "smf", "amf"], "the order the control-plane test uses"
    # and why the budgets are not listed: v1 has no call for that kind
    budgets = load_yaml_all(os.path.join(CNF, PDB_FILE))
    assert {d["kind"] for d in budgets} == {"PodDisruptionBudget"}
    assert "PodDisruptionBudget" not in transformer.method_value


def test_tacker_v2_keeps_every_listed_object(cnf_package, cnf_v2_vnfd):
    from tacker.sol_refactored.infra_drivers.kubernetes import kubernetes_utils
    files = request("v2")["additionalParams"]["lcm-kubernetes-def-files"]
    expected = sum(len(load_yaml_all(os.path.join(CNF, f))) for f in files)
    reses, namespace = kubernetes_utils.get_k8s_reses_from_json_files(
        files, cnf_v2_vnfd, None, "cnf", "inst-under-test")
    assert namespace == "cnf"
    assert len(reses) == expected, "v2 drops the kinds it does not know"
    assert sorted(r.name for r in reses if r.kind in kubernetes_utils.TARGET_KIND) == \
        sorted(WORKLOADS)
    # and why the budgets are not listed: v2 would drop them without a word
    dropped, _ = kubernetes_utils.get_k8s_reses_from_json_files(
        [PDB_FILE], cnf_v2_vnfd, None, "cnf", "inst-under-test")
    assert dropped == []


def test_tacker_onboards_the_cnf(cnf_onboarded):
    vnf_data, flavours, artifacts = cnf_onboarded
    assert vnf_data["descriptor_id"] == "8195e678-e208-45bb-a1aa-3f410c128900"
    assert [f["flavour_id"] for f in flavours] == ["simple"]
    # csar build lists every manifest with its hash; Tacker checked them
    sources = {a["Source"] for a in artifacts}
    for name in manifest_files():
        assert "Files/kubernetes/" + name in sources


@pytest.mark.parametrize("api", sorted(REQUESTS))
def test_instantiate_request_passes_the_tacker_api_schema(api):
    body = request(api)
    if api == "v1":
        from tacker.api.schemas import vnf_lcm
        from tacker.api.validation import validators
        validators._SchemaValidator(vnf_lcm.instantiate).validate(body)
        (vim,) = body["vimConnectionInfo"]
        assert vim["vimType"] == "kubernetes"
    else:
        from tacker.sol_refactored.api.schemas import vnflcm_v2
        from tacker.sol_refactored.api import validator
        validator.SolSchemaValidator(vnflcm_v2.InstantiateVnfRequest_V200).validate(body)
        (vim,) = body["vimConnectionInfo"].values()
        assert vim["vimType"] == "ETSINFV.KUBERNETES.V_1"
    assert body["flavourId"] == "simple"


# --------------------------------------------------------------------------
# The VNFD: one VDU per workload


def test_vdus_are_the_workloads(cnf_v2_vnfd):
    fl = flavour()
    vdus = {k: v for k, v in fl["topology_template"]["node_templates"].items()
            if v["type"] == "tosca.nodes.nfv.Vdu.Compute"}
    assert {v["properties"]["name"] for v in vdus.values()} == set(WORKLOADS)
    assert set(vdus) == set(WORKLOADS)
    level = cnf_v2_vnfd.get_default_instantiation_level("simple")
    for name, doc in workloads().items():
        assert doc["kind"] == WORKLOADS[name]
        profile = vdus[name]["properties"]["vdu_profile"]
        replicas = doc["spec"]["replicas"]
        assert profile["min_number_of_instances"] <= replicas <= \
            profile["max_number_of_instances"]
        # Tacker sets replicas from the instantiation level: the manifests agree
        assert cnf_v2_vnfd.get_vdu_num("simple", name, level) == replicas


def test_scaling_aspects_scale_their_workload(cnf_v2_vnfd):
    fl = flavour()
    aspects = [p for p in fl["topology_template"]["policies"] if "scaling_aspects" in p]
    (policy,) = aspects
    for aspect, value in policy["scaling_aspects"]["properties"]["aspects"].items():
        vdus = cnf_v2_vnfd.get_scale_vdu_and_num("simple", aspect)
        (vdu,) = vdus
        assert aspect == "%s_aspect" % vdu
        top = workloads()[vdu]["spec"]["replicas"] + vdus[vdu] * value["max_scale_level"]
        profile = fl["topology_template"]["node_templates"][vdu]["properties"]["vdu_profile"]
        assert top == profile["max_number_of_instances"]
    assert cnf_v2_vnfd.get_scale_vdu_and_num("simple", "udr_aspect") == {}


# --------------------------------------------------------------------------
# What a careful operator writes


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_containers_have_requests_limits_probes_and_a_tight_security_context(name):
    spec = workloads()[name]["spec"]["template"]["spec"]
    assert spec["automountServiceAccountToken"] is False
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for c in spec["containers"]:
        res = c["resources"]
        assert {"cpu", "memory"} <= set(res["requests"])
        assert "memory" in res["limits"]
        for probe in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert probe in c, probe
        sc = c["securityContext"]
        assert sc["allowPrivilegeEscalation"] is False
        assert sc["readOnlyRootFilesystem"] is True
        assert sc["capabilities"] == {"drop": ["ALL"]}
        assert ":" in c["image"] and not c["image"].endswith(":latest")


@pytest.mark.parametrize("name", sorted(WORKLOADS))
def test_every_workload_has_a_disruption_budget_over_its_pods(name):
    budgets = [d for d in load_yaml_all(os.path.join(CNF, PDB_FILE))
               if d["kind"] == "PodDisruptionBudget"]
    labels = workloads()[name]["spec"]["template"]["metadata"]["labels"]
    matching = [b for b in budgets
                if all(labels.get(k) == v for k, v in b["spec"]["selector"]["matchLabels"].items())]
    assert [b["metadata"]["name"] for b in matching] == [name]
    (budget,) = matching
    assert budget["apiVersion"] == "policy/v1"
    spec = budget["spec"]
    replicas = workloads()[name]["spec"]["replicas"]
    allowed = spec.get("maxUnavailable", replicas - spec.get("minAvailable", replicas))
    assert allowed == 1, "one pod of each workload at a time"


def _required_host_terms(spec):
    anti = (spec.get("affinity") or {}).get("podAntiAffinity") or {}
    return [t for t in anti.get("requiredDuringSchedulingIgnoredDuringExecution", [])
            if t["topologyKey"] == HOST_KEY]


def test_the_four_placement_variants():
    w = workloads()
    specs = {n: d["spec"]["template"]["spec"] for n, d in w.items()}
    for name in ("upf", "udr"):
        (term,) = _required_host_terms(specs[name])
        assert term["labelSelector"] == w[name]["spec"]["selector"]
    preferred = specs["smf"]["affinity"]["podAntiAffinity"][
        "preferredDuringSchedulingIgnoredDuringExecution"]
    assert [(p["weight"], p["podAffinityTerm"]["topologyKey"]) for p in preferred] == [
        (100, HOST_KEY), (10, "kubernetes.io/hostname")]
    (hard, soft) = specs["amf"]["topologySpreadConstraints"]
    assert (hard["topologyKey"], hard["maxSkew"], hard["whenUnsatisfiable"]) == (
        HOST_KEY, 1, "DoNotSchedule")
    assert hard["labelSelector"] == w["amf"]["spec"]["selector"]
    assert (soft["topologyKey"], soft["whenUnsatisfiable"]) == (
        "kubernetes.io/hostname", "ScheduleAnyway")


def test_one_replica_per_host_rolls_without_surge():
    """With required anti-affinity, a surge pod finds every host taken."""
    for name, doc in workloads().items():
        if doc["kind"] == "Deployment" and _required_host_terms(
                doc["spec"]["template"]["spec"]):
            assert doc["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": 0,
                                                                "maxUnavailable": 1}, name


@pytest.mark.slow
def test_csar_validate_is_clean_on_the_sample_cluster(cnf_built):
    """``hwaffinity csar validate`` (upload, manifests, flavour, and the plan
    on samples/cluster.yaml: 6 workers on 3 hosts) finds no problem."""
    import subprocess
    import sys
    from .pkgtools import ROOT
    proc = subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main", "csar",
                           "validate", cnf_built[0], "--cluster",
                           os.path.join(ROOT, "samples", "cluster.yaml")],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "18 of 18 pods placed on 3 distinct CIS-node value(s)" in proc.stdout


@pytest.mark.slow
@pytest.mark.parametrize("api", sorted(REQUESTS))
def test_csar_validate_plans_in_the_namespace_the_instantiate_request_names(
        cnf_built, api, tmp_path):
    """Issue #54's false green: with a upf already running in namespace cnf (on one of the
    three hosts), the CNF instantiated there by the guide's request cannot place its third
    upf replica. Planned in Tacker's default namespace, all 18 pods fit; planned where the
    request puts them, validate says so and exits 1."""
    import subprocess
    import sys
    import yaml
    from tests.builders import container, namespace, pod
    from .pkgtools import ROOT
    with open(os.path.join(ROOT, "samples", "cluster.yaml")) as f:
        cluster = yaml.safe_load(f)
    upf = next(d for d in load_yaml_all(os.path.join(CNF, "Files", "kubernetes", "upf.yaml"))
               if d["kind"] == "Deployment")
    labels = upf["spec"]["template"]["metadata"]["labels"]
    worker = next(i for i in cluster["items"] if i["kind"] == "Node")["metadata"]["name"]
    cluster["items"] += [namespace("cnf"), pod("upf-running", labels, ns="cnf", on=worker,
                                              phase="Running", containers=[container()])]
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(yaml.safe_dump(cluster))

    def validate(*flags):
        return subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main", "csar",
                               "validate", cnf_built[0], "--cluster", str(snapshot)]
                              + list(flags), capture_output=True, text=True, timeout=300)
    apart = validate()
    assert apart.returncode == 0, apart.stdout + apart.stderr
    assert 'planned in namespace "default"' in apart.stdout
    there = validate("--instantiate-request", REQUESTS[api])
    assert there.returncode == 1, there.stdout + there.stderr
    assert "17 of 18 pods placed" in there.stdout
    assert 'planned in namespace "cnf"' in there.stdout
    assert "Files/kubernetes/disruption-budgets.yaml" in there.stdout   # not deployed
    assert validate("-n", "cnf").returncode == 1


# The other sample requests of VNF-B's life (run through Tacker by
# tests/tacker_e2e/test_tacker_cnf.py), each against Tacker's own schema.
V2_SCHEMAS = {"scale_out_upf.json": "ScaleVnfRequest_V200",
              "scale_out_smf.json": "ScaleVnfRequest_V200",
              "heal_pod.json": "HealVnfRequest_V200",
              "terminate.json": "TerminateVnfRequest_V200"}
V1_SCHEMAS = {"heal_pod.json": "heal", "terminate.json": "terminate"}


def _lcm_request(api, name):
    with open(os.path.join(os.path.dirname(REQUESTS[api]), name)) as f:
        return json.load(f)


@pytest.mark.parametrize("name", sorted(V2_SCHEMAS))
def test_v2_lcm_requests_pass_the_tacker_api_schema(name):
    from tacker.sol_refactored.api import validator
    from tacker.sol_refactored.api.schemas import vnflcm_v2
    validator.SolSchemaValidator(getattr(vnflcm_v2, V2_SCHEMAS[name])).validate(
        _lcm_request("v2", name))


@pytest.mark.parametrize("name", sorted(V1_SCHEMAS))
def test_v1_lcm_requests_pass_the_tacker_api_schema(name):
    from tacker.api.schemas import vnf_lcm
    from tacker.api.validation import validators
    validators._SchemaValidator(getattr(vnf_lcm, V1_SCHEMAS[name])).validate(
        _lcm_request("v1", name))


def test_scale_requests_name_the_vnfds_aspects():
    """v1 has no schema for a scale request (its controller checks it): the same
    SOL003 body as v2's, and every aspect a request names is the VNFD's."""
    aspects = {}
    for policy in flavour()["topology_template"]["policies"]:
        for body in policy.values():
            if body["type"] == "tosca.policies.nfv.ScalingAspects":
                aspects.update(body["properties"]["aspects"])
    assert _lcm_request("v1", "scale_out_upf.json") == _lcm_request("v2", "scale_out_upf.json")
    for name in ("scale_out_upf.json", "scale_out_smf.json"):
        assert _lcm_request("v2", name)["aspectId"] in aspects


def test_tacker_v1_reads_the_flavour_it_instantiates(cnf_package):
    """v1's instantiate reads the flavour with vnflcm.utils and pops its
    substitution_mappings.requirements: a flavour without them is a KeyError inside
    the conductor, and the instantiate never starts (found through Tacker)."""
    from tacker.vnflcm import utils
    vnfd = utils._get_flavour_based_vnfd(cnf_package, "simple")
    assert vnfd["topology_template"]["substitution_mappings"].pop("requirements") == {
        "virtual_link_external": []}
