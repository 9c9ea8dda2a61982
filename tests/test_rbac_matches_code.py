"""Each in-cluster component's shipped RBAC (deploy/<component>/rbac.yaml) grants exactly
the (API group, resource, verb) triples its code uses: nothing it calls is missing, nothing
granted is unused.

The code side is a static scan (no process runs): from the component's entry point
(``cli/<component>.py``) and its package, every reference to a Kubernetes client API
method (``core.list_node``, ``conn.core().patch_namespaced_pod``, ...: the names
``kubernetes.client.CoreV1Api``/``AppsV1Api`` really have) and every use of a
``tacker_hwaffinity/kube/`` adapter (``events.record_event``, ``Informer(...)``, ...) is
followed into the adapter's body, where its own API method references and raw requests
(the Lease elector's ``_send(METHOD, path, body, timeout, VERB)``) are read. A list method
handed to ``Informer`` is listed and watched. The role side is every rule of the
ClusterRoles and Roles bound to the component's ServiceAccount.
"""
import ast
import os
import re

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PKG = os.path.join(ROOT, "tacker_hwaffinity")
NAMESPACE = "hwaffinity-system"
COMPONENTS = {"agent": "hwaffinity-agent", "controller": "hwaffinity-controller",
              "webhook": "hwaffinity-webhook"}

_VERBS = {"list": "list", "read": "get", "create": "create", "patch": "patch",
          "replace": "update", "delete": "delete"}
_METHOD = re.compile(r"^(list|read|create|patch|replace|delete)_(namespaced_)?([a-z_]+?)"
                     r"(_for_all_namespaces)?$")
_RAW_PATH = re.compile(r"^/apis/([^/]+)/[^/]+/namespaces/%s/([a-z]+)$")


def _api_classes():
    from kubernetes import client
    return {"": client.CoreV1Api, "apps": client.AppsV1Api, "batch": client.BatchV1Api,
            "policy": client.PolicyV1Api}


def api_method(name):
    """(group, resource, verb, namespaced-or-None) of a client API method NAME, or None."""
    m = _METHOD.match(name)
    if not m:
        return None
    for group, cls in _api_classes().items():
        if hasattr(cls, name):
            verb, resource = _VERBS[m.group(1)], m.group(3)
            parts = resource.split("_")
            # pod_eviction -> pods/eviction; replication_controller -> replicationcontrollers
            if len(parts) > 1 and parts[-1] in ("eviction", "log", "status", "binding"):
                resource = "%ss/%s" % ("".join(parts[:-1]), parts[-1])
            else:
                resource = "".join(parts) + "s"
            return group, resource, verb
    return None


class Module:
    """One source file: its kube imports and its functions/classes' bodies."""

    def __init__(self, path):
        self.path = path
        self.tree = ast.parse(open(path).read(), path)
        self.aliases = {}        # local name -> ("mod", kube module) or ("obj", module, name)
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    local = a.asname or a.name
                    if node.module == "tacker_hwaffinity.kube":
                        self.aliases[local] = ("mod", a.name)
                    elif node.module.startswith("tacker_hwaffinity.kube."):
                        self.aliases[local] = ("obj", node.module.rsplit(".", 1)[1], a.name)
        self.defs = {n.name: n for n in self.tree.body
                     if isinstance(n, (ast.FunctionDef, ast.ClassDef))}


def _kube_module(name):
    return Module(os.path.join(PKG, "kube", name + ".py"))


def _adapters_used(module, node):
    """{(kube module, name)} that NODE (an AST) references through MODULE's imports."""
    used = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name):
            alias = module.aliases.get(n.value.id)
            if alias and alias[0] == "mod":
                used.add((alias[1], n.attr))
        elif isinstance(n, ast.Name):
            alias = module.aliases.get(n.id)
            if alias and alias[0] == "obj":
                used.add((alias[1], alias[2]))
    return used


def _direct_pairs(node, watched_by_informer):
    """The API triples NODE's own code references: client API method attributes (a list
    method given to an Informer is watched too) and raw ``_send`` requests."""
    pairs = set()
    informer_args = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Call) and watched_by_informer(n.func):
            for arg in list(n.args) + [k.value for k in n.keywords]:
                if isinstance(arg, ast.Attribute):
                    informer_args.add(id(arg))
    raw_paths = [_RAW_PATH.match(n.value) for n in ast.walk(node)
                 if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    raw_paths = [m for m in raw_paths if m]
    for n in ast.walk(node):
        if isinstance(n, ast.Attribute):
            found = api_method(n.attr)
            if found:
                pairs.add(found)
                if id(n) in informer_args and found[2] == "list":
                    pairs.add((found[0], found[1], "watch"))
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) \
                and n.func.attr == "_send" and n.args \
                and isinstance(n.args[-1], ast.Constant):
            assert raw_paths, "%s: a _send without a recognisable API path" % ast.dump(n)
            for m in raw_paths:
                pairs.add((m.group(1), m.group(2), n.args[-1].value))
    return pairs


def _is_informer(module):
    def check(func):
        if isinstance(func, ast.Name):
            return module.aliases.get(func.id) == ("obj", "informer", "Informer")
        if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
            return module.aliases.get(func.value.id) == ("mod", "informer") \
                and func.attr == "Informer"
        return False
    return check


def _adapter_pairs(kube_module, name, seen):
    """The triples a kube adapter (function or class) uses, following kube-internal calls."""
    if (kube_module, name) in seen:
        return set()
    seen.add((kube_module, name))
    module = _kube_module(kube_module)
    node = module.defs.get(name)
    if node is None:
        return set()             # a constant or exception class: no API use
    pairs = _direct_pairs(node, _is_informer(module))
    # helpers of the same module it calls (``_call``, ``_decision`` ...)
    for n in ast.walk(node):
        if isinstance(n, ast.Name) and n.id in module.defs and n.id != name:
            pairs |= _adapter_pairs(kube_module, n.id, seen)
    for other, other_name in _adapters_used(module, node):
        pairs |= _adapter_pairs(other, other_name, seen)
    return pairs


def _component_files(component):
    files = [os.path.join(PKG, "cli", component + ".py")]
    package = os.path.join(PKG, component)
    files += sorted(os.path.join(package, f) for f in os.listdir(package) if f.endswith(".py"))
    return files


def code_pairs(component):
    """{(group, resource, verb)} the component's code uses."""
    pairs, seen = set(), set()
    for path in _component_files(component):
        module = Module(path)
        pairs |= _direct_pairs(module.tree, _is_informer(module))
        for kube_module, name in _adapters_used(module, module.tree):
            pairs |= _adapter_pairs(kube_module, name, seen)
    return pairs


def role_pairs(component):
    """({(group, resource, verb)} of ClusterRoles, of Roles) bound to the component's
    ServiceAccount in deploy/<component>/rbac.yaml."""
    with open(os.path.join(ROOT, "deploy", component, "rbac.yaml")) as f:
        docs = [d for d in yaml.safe_load_all(f) if d]
    account = {"kind": "ServiceAccount", "name": COMPONENTS[component], "namespace": NAMESPACE}
    roles = {(d["kind"], d["metadata"]["name"]): d for d in docs
             if d["kind"] in ("ClusterRole", "Role")}
    cluster, namespaced = set(), set()
    for d in docs:
        if d["kind"] not in ("ClusterRoleBinding", "RoleBinding"):
            continue
        if not any({k: s.get(k) for k in account} == account for s in d["subjects"]):
            continue
        role = roles[(d["roleRef"]["kind"], d["roleRef"]["name"])]
        target = cluster if d["kind"] == "ClusterRoleBinding" else namespaced
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    for verb in rule["verbs"]:
                        target.add((group, resource, verb))
    return cluster, namespaced


def test_the_scan_reads_client_method_names_as_the_api_server_names_resources():
    assert api_method("list_pod_for_all_namespaces") == ("", "pods", "list")
    assert api_method("create_namespaced_pod_eviction") == ("", "pods/eviction", "create")
    assert api_method("patch_node") == ("", "nodes", "patch")
    assert api_method("read_namespaced_pod") == ("", "pods", "get")
    assert api_method("list_replica_set_for_all_namespaces") == ("apps", "replicasets", "list")
    assert api_method("list_widgets") is None           # no such client method


def test_the_scan_follows_an_adapter_into_its_body(tmp_path):
    """A module using events.record_event needs events/create and nothing else of
    kube.events (patch_annotations, in the same module, is not called)."""
    src = tmp_path / "m.py"
    src.write_text("from tacker_hwaffinity.kube import events\n"
                   "from tacker_hwaffinity.kube.informer import Informer\n"
                   "def f(conn, core):\n"
                   "    events.record_event(conn, {}, 'Normal', 'r', 'm', 'c')\n"
                   "    Informer(conn, core.list_node, 'Node', 'nodes', print)\n")
    module = Module(str(src))
    pairs = _direct_pairs(module.tree, _is_informer(module))
    for kube_module, name in _adapters_used(module, module.tree):
        pairs |= _adapter_pairs(kube_module, name, set())
    assert pairs == {("", "events", "create"), ("", "nodes", "list"), ("", "nodes", "watch")}


@pytest.mark.parametrize("component", sorted(COMPONENTS))
def test_shipped_roles_grant_exactly_what_the_code_calls(component):
    used = code_pairs(component)
    assert used, "the scan found no API use in %s: the scan is broken" % component
    cluster, namespaced = role_pairs(component)
    granted = cluster | namespaced
    missing = sorted(used - granted)
    unused = sorted(granted - used)
    assert not missing, "%s calls what deploy/%s/rbac.yaml does not grant: %s" % (
        component, component, missing)
    assert not unused, "deploy/%s/rbac.yaml grants what %s never calls: %s" % (
        component, component, unused)


def test_only_the_controller_lease_is_namespaced():
    """The Lease verbs sit in a Role in the controller's namespace, not in a ClusterRole;
    every other grant is cluster-wide (pods, nodes and Events of every namespace)."""
    cluster, namespaced = role_pairs("controller")
    assert namespaced == {("coordination.k8s.io", "leases", v) for v in ("get", "create",
                                                                         "update")}
    assert not any(r == "leases" for _, r, _ in cluster)
    for component in ("agent", "webhook"):
        assert role_pairs(component)[1] == set()
