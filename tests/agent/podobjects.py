"""Pod objects as the API server returns them for the node agent's tests."""
import uuid

from tests import builders

CR = "cri-resource-manager.intel.com/"


def pod_object(name, containers=("c",), cpu="2", memory="1Gi", ns="default", qos="Guaranteed",
               annotations=None, ids=True, created="2026-11-23T10:00:00Z", uid=None):
    """A bound pod; IDS: the containers have container IDs (the runtime made them)."""
    uid = uid or str(uuid.uuid5(uuid.NAMESPACE_DNS, "%s/%s" % (ns, name)))
    amounts = {"cpu": cpu, "memory": memory}
    res = {} if qos == "BestEffort" else {"requests": amounts, "limits": dict(amounts)}
    obj = builders.pod(name, ns=ns, uid=uid, created=created, annotations=annotations or {},
                       on="n1", phase="Running", qos=qos,
                       containers=[builders.container(c, resources=res) for c in containers])
    del obj["metadata"]["labels"]
    if ids:
        obj["status"]["containerStatuses"] = [
            {"name": c, "containerID": "containerd://%s" % (uuid.uuid5(
                uuid.NAMESPACE_OID, uid + c).hex * 2)} for c in containers]
    return obj


def anti(target, weight=1, container="c"):
    return {CR + "anti-affinity": "%s:\n- scope: {operator: AlwaysTrue}\n  match: "
            "{key: pod/name, operator: Equals, values: [%s]}\n  weight: %d"
            % (container, target, weight)}


def pull(target, weight=1, container="c"):
    return {CR + "affinity": "%s:\n- scope: {operator: AlwaysTrue}\n  match: "
            "{key: pod/name, operator: Equals, values: [%s]}\n  weight: %d"
            % (container, target, weight)}
