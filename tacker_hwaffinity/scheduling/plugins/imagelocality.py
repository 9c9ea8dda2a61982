"""ImageLocality: prefer nodes that already hold the pod's images (node ``status.images``).

Per container image (init containers too) present on a node: its size scaled by
the share of nodes that hold it; the sum is clamped to [23 MiB, 1000 MiB x
containers] and mapped onto 0..100. Image names are compared as upstream: the
pod's image gets ``:latest`` when it has no tag, node names are taken as listed.
A snapshot whose nodes list no images scores 0 everywhere, as kube-scheduler
does for nodes that report none.
"""
import numpy as np

from tacker_hwaffinity.scheduling.arrays import BoolArray, IntArray
from tacker_hwaffinity.scheduling.framework import Cycle
from tacker_hwaffinity.scheduling.model import PodSpecInfo
from tacker_hwaffinity.scheduling.state import ClusterState

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def normalized_image_name(name: str) -> str:
    if name.rfind(":") <= name.rfind("/"):
        name += ":latest"
    return name


class ImageLocality:
    name = "ImageLocality"

    @staticmethod
    def _image_scores(state: ClusterState, image: str) -> IntArray:
        """Per node: scaledImageScore of IMAGE (0 where the node lacks it)."""
        cache = state.data(ImageLocality.name).setdefault("image-scores", {})
        got: IntArray | None = cache.get(image)
        if got is None:
            sizes = [node.images.get(image) for node in state.nodes]
            holders = sum(1 for s in sizes if s is not None)
            spread = holders / len(state.nodes) if state.nodes else 0.0
            got = cache[image] = np.array(
                [0 if s is None else int(float(s) * spread) for s in sizes], dtype=np.int64)
        return got

    def scores(self, cycle: Cycle, feasible: BoolArray) -> IntArray:
        state, spec = cycle.state, cycle.pod.spec
        data = state.data(self.name)
        any_images = data.get("any-images")
        if any_images is None:
            any_images = data["any-images"] = any(n.images for n in state.nodes)
        if not any_images:
            return state.zeros  # nothing is on any node: every sum is below the minimum
        cache = data.setdefault("image-locality", {})
        got: IntArray | None = cache.get(spec.images)
        if got is None:
            got = cache[spec.images] = self._scores(state, spec)
        return got

    def _scores(self, state: ClusterState, spec: PodSpecInfo) -> IntArray:
        total = np.zeros(len(state.nodes), dtype=np.int64)
        for image in spec.images:
            total += self._image_scores(state, normalized_image_name(image))
        max_threshold = MAX_CONTAINER_THRESHOLD * len(spec.images)
        clamped = np.clip(total, MIN_THRESHOLD, max(max_threshold, MIN_THRESHOLD))
        span = max_threshold - MIN_THRESHOLD
        if span <= 0:
            return state.zeros
        return 100 * (clamped - MIN_THRESHOLD) // span
