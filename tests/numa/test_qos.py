"""Pod QoS class as Kubernetes computes it."""
import pytest

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects.qos import pod_qos_class
from tests import builders


def pod(*resources, init=()):
    """A pod whose containers c0, c1, ... have RESOURCES, and init containers i0, ... INIT."""
    return builders.pod(
        "p", containers=[builders.container("c%d" % i, resources=r)
                         for i, r in enumerate(resources)],
        initContainers=[builders.container("i%d" % i, resources=r) for i, r in enumerate(init)])


G = {"limits": {"cpu": "1", "memory": "1Gi"}}


@pytest.mark.parametrize("p,expected", [
    (pod({}), "BestEffort"),
    (pod({"requests": {"ephemeral-storage": "1Gi"}}), "BestEffort"),
    (pod({"requests": {"cpu": "0"}}), "BestEffort"),
    (pod(G), "Guaranteed"),
    (pod({"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}),
     "Guaranteed"),
    (pod({"requests": {"cpu": "1000m", "memory": "1024Mi"}, **G}), "Guaranteed"),
    (pod({"requests": {"cpu": "500m"}, "limits": {"cpu": "1", "memory": "1Gi"}}), "Burstable"),
    (pod({"limits": {"cpu": "1"}}), "Burstable"),
    (pod(G, {}), "Burstable"),
    (pod(G, init=[{"requests": {"cpu": "1"}}]), "Burstable"),
    (pod(G, init=[G]), "Guaranteed"),
    (pod({"requests": {"memory": "1Gi"}}), "Burstable"),
])
def test_qos(p, expected):
    assert pod_qos_class(p) == expected


def test_bad_quantity_names_field():
    with pytest.raises(InputError) as e:
        pod_qos_class(pod({"requests": {"cpu": "lots"}}))
    assert e.value.field == "spec.containers[0].resources.requests.cpu"
