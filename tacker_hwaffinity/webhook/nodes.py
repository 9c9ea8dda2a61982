"""The node-registration webhook (``/register-node``): a Node CREATE gets the host-unknown
taint (``constants.HOST_UNKNOWN_TAINT``, NoSchedule), so that nothing is bound to a node
whose physical host no one has read from Nova yet; the controller lifts it once the node's
labels are Nova's answer (``controller.hosttruth``). What the kubelet's
``--register-with-taints`` does on clusters install_k8s.sh made, for any other cluster.

Left as they are: a node that carries the taint already, and a control-plane node (one
that registers with kubeadm's ``node-role.kubernetes.io/control-plane`` or ``master``
taint: it runs no workload replicas, and the workers' selection of the controller may not
include it, so nothing would lift the taint). Anything else of the request (an UPDATE, a
subresource, an object that is no Node) gets no patch. The webhook's configuration
(deploy/webhook/webhooks.yaml) has failurePolicy Fail: while the webhook is down a node
cannot register (the kubelet retries), rather than register untainted.
"""
from tacker_hwaffinity.constants import CONTROL_PLANE_TAINTS, HOST_UNKNOWN_TAINT
from tacker_hwaffinity.objects.jsontypes import ReadOnlyJson
from tacker_hwaffinity.webhook.patches import Operation

TAINT = {"key": HOST_UNKNOWN_TAINT, "effect": "NoSchedule"}


def registration_patch(request: ReadOnlyJson) -> list[Operation]:
    """The JSON Patch operations that taint the Node of the CREATE REQUEST; [] for none."""
    obj = request.get("object")
    if (request.get("operation") != "CREATE" or request.get("subResource")
            or not isinstance(obj, dict) or obj.get("kind") != "Node"):
        return []
    spec = obj.get("spec")
    if spec is None:
        return [{"op": "add", "path": "/spec", "value": {"taints": [dict(TAINT)]}}]
    if not isinstance(spec, dict):
        return []                   # the API server refuses such a Node anyway
    taints = spec.get("taints")
    if taints is None:
        return [{"op": "add", "path": "/spec/taints", "value": [dict(TAINT)]}]
    if not isinstance(taints, list):
        return []
    keys = {t.get("key") for t in taints if isinstance(t, dict)}
    if HOST_UNKNOWN_TAINT in keys or keys & set(CONTROL_PLANE_TAINTS):
        return []
    return [{"op": "add", "path": "/spec/taints/-", "value": dict(TAINT)}]
