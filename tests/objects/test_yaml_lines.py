"""The line reader of kubectl's YAML (objects/yaml_lines.py) gives exactly what libyaml's
events give (yaml_events, and so PyYAML's SafeLoader): the same values, YAML 1.1's among
them, the same mappings handed to the pruner in the same order, and for any other text
it hands over (NeedsFullLoader) instead of guessing."""

import pytest
import yaml
from hypothesis import given, settings, strategies as st

from tacker_hwaffinity.objects import pruning, yaml_events, yaml_lines, yaml_strict
from tacker_hwaffinity.scheduling.snapshot import SNAPSHOT_FIELDS

# What `kubectl get pods,nodes -o yaml` prints (go-yaml's style: keys sorted, "- " at the
# key's indentation, double quotes, literal blocks, long strings continued on the next
# line, managedFields' keys), with a Node, a Pod and a Namespace.
KUBECTL = '''apiVersion: v1
items:
- apiVersion: v1
  kind: Node
  metadata:
    annotations:
      kubeadm.alpha.kubernetes.io/cri-socket: unix:///run/containerd/containerd.sock
      node.alpha.kubernetes.io/ttl: "0"
    creationTimestamp: "2024-05-02T08:14:00Z"
    labels:
      CIS-node: compute-0001
      kubernetes.io/hostname: node-1
      on: "yes"
    managedFields:
    - apiVersion: v1
      fieldsType: FieldsV1
      fieldsV1:
        f:metadata:
          f:annotations:
            .: {}
            f:node.alpha.kubernetes.io/ttl: {}
        f:status:
          f:conditions:
            k:{"type":"Ready"}:
              .: {}
              f:lastHeartbeatTime: {}
          f:podCIDRs:
            v:"10.244.0.0/24": {}
      manager: kubelet
      operation: Update
      time: "2024-05-02T08:14:05Z"
    name: node-1
    resourceVersion: "1234"
    uid: 0a1b2c3d-0000-4000-8000-000000000001
  spec:
    podCIDR: 10.244.0.0/24
    podCIDRs:
    - 10.244.0.0/24
    taints:
    - effect: NoSchedule
      key: node-role.kubernetes.io/control-plane
  status:
    allocatable:
      cpu: "8"
      hugepages-1Gi: "0"
      memory: 32810516Ki
      pods: "110"
    conditions:
    - lastHeartbeatTime: "2024-05-02T08:14:41Z"
      message: kubelet is posting ready status. AppArmor enabled, and a message long enough
        to be continued on the next line as go-yaml folds it
      reason: KubeletReady
      status: "True"
      type: Ready
    daemonEndpoints:
      kubeletEndpoint:
        Port: 10250
    images:
    - names:
      - registry.example.com/app@sha256:0123456789abcdef
      - registry.example.com/app:1.0
      sizeBytes: 123456789
    nodeInfo:
      machineID: 00000000000000000000000000000010
- apiVersion: v1
  kind: Pod
  metadata:
    annotations:
      k8s.v1.cni.cncf.io/network-status: |-
        [{
            "name": "cbr0",
            "ips": [
                "10.244.1.5"
            ],
            "default": true
        }]
      kubectl.kubernetes.io/last-applied-configuration: |
        {"apiVersion":"v1","kind":"Pod","metadata":{"name":"web-0"}}
      note: 'it''s: quoted'
      escaped: "tab\\tand \\"quotes\\""
    generateName: web-
    labels:
      app: web
      controller-revision-hash: web-5d4f8b9c7
      statefulset.kubernetes.io/pod-name: web-0
    name: web-0
    namespace: cnf
    ownerReferences:
    - apiVersion: apps/v1
      blockOwnerDeletion: true
      controller: true
      kind: StatefulSet
      name: web
      uid: 7f9c1e2a-1111-4111-8111-111111111111
  spec:
    affinity:
      podAntiAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
        - labelSelector:
            matchExpressions:
            - key: app
              operator: In
              values:
              - web
          topologyKey: CIS-node
    containers:
    - args:
      - --port=8080
      - -v
      command: ["/bin/sh", "-c"]
      env:
      - name: MODE
        value: "off"
      - name: EMPTY
      image: registry.example.com/web:1.2
      resources:
        limits:
          memory: 256Mi
        requests:
          cpu: 100m
          memory: 128Mi
      securityContext: {}
      volumeMounts: []
    nodeName: node-1
    priority: 0
    terminationGracePeriodSeconds: 30
    tolerations:
    - effect: NoExecute
      key: node.kubernetes.io/not-ready
      operator: Exists
      tolerationSeconds: 300
    volumes:
    - name: config
      projected:
        defaultMode: 0644
        sources:
        - configMap:
            name: kube-root-ca.crt
  status:
    conditions:
    - lastProbeTime: null
      lastTransitionTime: "2024-05-02T08:14:08Z"
      message: '0/3 nodes are available: 1 node(s) had untolerated taint {node-role:
        }, 2 Insufficient cpu.'
      status: "False"
      type: PodScheduled
    phase: Running
    podIP: 10.244.1.5
    qosClass: Burstable
- apiVersion: v1
  kind: Namespace
  metadata:
    labels:
      kubernetes.io/metadata.name: cnf
    name: cnf
  spec:
    finalizers:
    - kubernetes
  status:
    phase: Active
kind: List
metadata:
  resourceVersion: ""
'''


def recording_pruner():
    """(the mappings the pruner was given, as text, in order; the pruner)."""
    seen = []
    prune = pruning.pruner(SNAPSHOT_FIELDS)

    def record(mapping):
        if mapping:         # an empty one has nothing to prune: not counted
            seen.append(repr(mapping))
        prune(mapping)
    return seen, record


def both(text):
    """(what yaml_lines reads, the mappings its pruner saw), and the same of yaml_events."""
    out = []
    for module in (yaml_lines, yaml_events):
        seen, prune = recording_pruner()
        out.append((module.load_all(text, prune), seen))
    return out


def read(text):
    """yaml_lines' documents of TEXT, or None when it hands TEXT over."""
    try:
        return yaml_lines.load_all(text)
    except yaml_events.NeedsFullLoader:
        return None


def test_kubectl_output_reads_as_from_libyaml_events():
    lines, events = both(KUBECTL)
    assert lines == events
    assert len(lines[1]) > 10
    node, pod, namespace = yaml_strict.load_all(KUBECTL)[0]["items"]
    assert read(KUBECTL) == yaml_strict.load_all(KUBECTL)
    # what it took from its lines to yaml_events is there, exactly
    assert pod["metadata"]["annotations"]["note"] == "it's: quoted"
    assert pod["status"]["conditions"][0]["message"].endswith("{node-role: }, 2 Insufficient cpu.")


def test_unpruned_kubectl_output_agrees_with_libyaml():
    assert yaml_lines.load_all(KUBECTL) == yaml_events.load_all(KUBECTL)


@pytest.mark.parametrize("text", [
    "a: yes\nb: no\nc: on\nd: off\ne: y\nf: Y\ng: TRUE\n",
    "mode: 0644\nhex: 0x1f\nsexagesimal: 1:20\nsep: 1_000\nplus: +12\nminus: -1\n"
    "e: 1e3\nf: 1.0e+3\ng: .5\no: 0o17\n",
    "a: ~\nb: null\nc: Null\nd:\ne: .inf\nf: -.Inf\n",
    "day: 2024-01-02\nstamp: 2024-01-02T03:04:05Z\nspaced: 2024-01-02 03:04:05.5 +01:00\n",
    "yes: 1\n2: a\nnull: b\n3.5: c\n",
    "'quoted key': 1\n\"dq key\": 2\nkey with spaces: 3\nk:{\"type\":\"Ready\"}: 4\n.: {}\n",
    "a: '0644'\nb: \"yes\"\nc: 'it''s'\nd: ''\ne: \"\"\n",
])
def test_yaml_1_1_values_are_safe_loaders(text):
    assert read(text) == [yaml.safe_load(text)]


@pytest.mark.parametrize("text", [
    "base: &b {a: 1}\nother: *b\n",                # anchors, aliases
    "<<: {a: 1}\nb: 2\n",                           # a merge key
    "a: !!str 1\n",                                 # a tag
    "a: 1\na: 2\n",                                 # a duplicate key (an error, located)
    "a: 2024-13-01\n",                              # a value that does not construct
    "a: 1 # comment\n", "# head\na: 1\n",           # comments
    "a:\tb\n", "a: b\r\n", "\ufeffa: 1\n", "a: \u2028\n", "a: b\x07\n",
    "--- text\n", "a: 1\n...\n", "%YAML 1.1\n---\na: 1\n",
    "scalar\n", "? a\n: b\n", "a: 1\n b: 2\n", "a: b: c\n", "-\n",
    "x" * 1100 + ": 1\n",                          # an implicit key over 1024 characters
    "a:\n" + "".join(" " * i + "a:\n" for i in range(1, 400)),
])
def test_what_it_does_not_read_is_handed_over(text):
    assert read(text) is None


@pytest.mark.parametrize("text", [
    "a: |\n  line\n  two\nb: >\n  folded\n  more\n\nc: x\n",
    "a: |+\n  keep\n\n\nb: 1\n", "a: |-\n  strip\n\nb: 1\n", "a: |2\n    indented\nb: 1\n",
    "a: [1, 2]\nb: {x: 1}\nc: [\n  3]\n", "a: { }\nb: [ ]\n",
    "a: long\n  continued\n\n  after a blank\nb: 2\n", "- long\n  item\n- x\n",
    "a: \"multi\n  line\"\nb: 'also\n  this'\n", "a: \"esc\\u00e9\\n\"\n",
    "- - a\n  - b\n- c\n", "- \n  a: 1\n- b\n", "-   a: 1\n    b: 2\n- c\n",
    "a:  two spaces\nb: trailing   \n", "a:\n- 1\n- 2\nb:\n  - 3\nc: 4\n",
    "---\na: 1\n---\n---\nb: 2\n", "a: 1\n---\n", "---\n", "", "\n  \n", "a: 1\nb: 2",
    "a: |\n  no newline at the end", " a: 1\n b:\n  - x\n", "a: caf\u00e9 \u00e0 \u4e2d\n",
    "items:\n- a: 1\n  b:\n    plain on the next line\n- c: 2\n",
])
def test_values_it_takes_from_their_lines_are_libyamls(text):
    assert read(text) == yaml_strict.load_all(text)


def test_an_item_it_cannot_read_is_read_alone_and_pruned_once():
    odd = KUBECTL.replace("  kind: Namespace\n  metadata:\n",
                          "  kind: Namespace\n  metadata:\n    extra:\n      a scalar below\n")
    lines, events = both(odd)
    assert lines == events
    assert yaml_lines.load_all(odd)[0]["items"][2]["metadata"]["extra"] == "a scalar below"


def test_caches_stay_bounded(monkeypatch):
    monkeypatch.setattr(yaml_lines, "_CACHE_SIZE", 64)
    text = "".join("m%d:\n  key-%d: value-%d\n" % (i, i, i) for i in range(1000))
    reader = yaml_lines._Reader(text, None)
    assert reader.documents() == [yaml.safe_load(text)]
    assert max(len(reader.scalars.lines), len(reader.scalars.keys),
               len(reader.scalars.values), len(reader.scalars.heads)) <= 64


def test_chunks_start_at_column_0_and_change_nothing(monkeypatch):
    monkeypatch.setattr(yaml_lines, "_CHUNK", 50)
    assert len(list(yaml_lines._chunks(KUBECTL))) == 4    # one per item, and the head
    assert "".join(yaml_lines._chunks(KUBECTL)) == KUBECTL
    assert all(c[0] not in " \n" for c in yaml_lines._chunks(KUBECTL))
    lines, events = both(KUBECTL)
    assert lines == events


# --- properties ---------------------------------------------------------------------------

KEYS = st.sampled_from(["kind", "metadata", "name", "items", "labels", "a", "1", "yes", "on",
                        "null", "k:{\"a\":\"b\"}", ".", "f:spec", "with space", "-x", "", "'q'"])
TEXT = st.text(alphabet=st.sampled_from("ab -:#'\"{}[],&*!|>%@`?\\.0189eE+_~yYnNoOtT\u00e9\n"),
               max_size=12)
SCALARS = (st.none() | st.booleans() | st.integers() | TEXT
           | st.floats(allow_nan=False) | st.sampled_from(["0644", "1:20", "2024-01-02"]))
VALUES = st.recursive(SCALARS, lambda inner: st.lists(inner, max_size=4)
                      | st.dictionaries(KEYS | TEXT, inner, max_size=5), max_leaves=30)


@settings(max_examples=300, deadline=None)
@given(VALUES, st.sampled_from([20, 80, 1 << 20]), st.sampled_from([2, 4]),
       st.booleans())
def test_dumped_values_read_back_as_libyaml_reads_them(value, width, indent, explicit):
    """PyYAML's block style at any width (long strings continued) and indentation."""
    text = yaml.safe_dump(value, default_flow_style=False, width=width, indent=indent,
                          explicit_start=explicit, allow_unicode=True)
    got = read(text)
    assert got is None or got == [value]


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from("ab -:#'\"{}[]|>&*!\n\n\n    0.~\t"), max_size=80))
def test_any_text_reads_as_libyaml_reads_it_or_is_handed_over(text):
    try:
        got = yaml_lines.load_all(text)
    except (yaml_events.NeedsFullLoader, RecursionError):
        return
    assert repr(got) == repr(yaml_strict.load_all(text))   # repr: nan is nan there


def _mutated(text, data):
    """TEXT with one line indented differently, cut, doubled or given another value."""
    lines = text.split("\n")
    i = data.draw(st.integers(0, len(lines) - 1))
    how = data.draw(st.sampled_from(["indent", "dedent", "cut", "double", "value"]))
    if how == "indent":
        lines[i] = " " + lines[i]
    elif how == "dedent":
        lines[i] = lines[i][1:]
    elif how == "cut":
        lines[i] = lines[i][:data.draw(st.integers(0, len(lines[i])))]
    elif how == "double":
        lines.insert(i, lines[i])
    else:
        lines[i] += data.draw(st.sampled_from([" x", ": y", " |", "-", " {", "'", "\n  z"]))
    return "\n".join(lines)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_mutated_kubectl_output_reads_as_libyaml_reads_it_or_is_handed_over(data):
    text = _mutated(KUBECTL, data)
    try:
        got = yaml_lines.load_all(text)
    except (yaml_events.NeedsFullLoader, RecursionError):
        return
    assert repr(got) == repr(yaml_strict.load_all(text))
    lines, events = both(text)
    assert lines == events
