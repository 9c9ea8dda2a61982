"""PodDisruptionBudgets after losing one host, as the disruption controller counts.

``desiredHealthy`` (pkg/controller/disruption getExpectedPodCount):

* ``maxUnavailable`` (int or percent): expected = the controller's scale (the workload's
  desired count); maxUnavailable = the percent of expected rounded UP; desiredHealthy =
  max(expected - maxUnavailable, 0).
* ``minAvailable`` int: desiredHealthy = minAvailable.
* ``minAvailable`` percent: expected = the controller's scale; desiredHealthy = the
  percent of expected rounded UP.
* neither: minAvailable 1 (the API server's default).

The budget holds after a host fails when the selected running pods left are at least
desiredHealthy (running pods are taken as healthy: audit reads no readiness).
"""
import math
import re

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling.selectors import SelectorError, parse_label_selector

# What is read of a budget (``objects.pruning``'s kept-fields table).
FIELDS = {"metadata": ("name", "namespace", "resourceVersion"),
          "spec": ("selector", "minAvailable", "maxUnavailable"), "status": ()}

# apimachinery's IsValidPercent ("[0-9]+%", the whole text: "050%" is 50%, "50%\n" none);
# a budget's percent is at most 100% (the API server's IsNotMoreThan100Percent)
_PERCENT = re.compile(r"0*([0-9]{1,3})%")


def scaled(value, total, field):
    """intstr.GetScaledValueFromIntOrPercent(value, total, roundUp=true)."""
    if isinstance(value, int) and not isinstance(value, bool):
        if value < 0:
            raise InputError("expected a non-negative integer or a percent, got %r" % value,
                             field=field)
        return value
    if isinstance(value, str):
        m = _PERCENT.fullmatch(value)
        if m and int(m.group(1)) <= 100:
            return math.ceil(int(m.group(1)) * total / 100)
    raise InputError("expected an integer or a percent up to 100%% like '50%%', got %r"
                     % (value,), field=field)


class Budget:
    __slots__ = ("namespace", "name", "selector", "min_available", "max_unavailable")

    def __init__(self, obj):
        meta = obj.get("metadata") or {}
        self.namespace = meta.get("namespace") or "default"
        self.name = meta.get("name") or ""
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        sel = spec.get("selector")
        try:
            # policy/v1: an empty selector selects every pod of the namespace
            self.selector = parse_label_selector(sel, "spec.selector")
        except SelectorError as e:
            raise InputError(e.message, obj="PodDisruptionBudget %s/%s"
                             % (self.namespace, self.name), field=e.field)
        self.min_available = spec.get("minAvailable")
        self.max_unavailable = spec.get("maxUnavailable")
        if self.min_available is not None and self.max_unavailable is not None:
            raise InputError("minAvailable and maxUnavailable are both set",
                             obj="PodDisruptionBudget %s/%s" % (self.namespace, self.name),
                             field="spec")
        for f, v in (("minAvailable", self.min_available),
                     ("maxUnavailable", self.max_unavailable)):
            if v is not None:
                try:
                    scaled(v, 0, "spec." + f)
                except InputError as e:
                    raise e.located(obj="PodDisruptionBudget %s/%s"
                                    % (self.namespace, self.name))

    def desired_healthy(self, expected_scale, selected):
        """desiredHealthy for a controller scale EXPECTED_SCALE and SELECTED pods."""
        if self.max_unavailable is not None:
            mu = scaled(self.max_unavailable, expected_scale, "spec.maxUnavailable")
            return max(expected_scale - mu, 0)
        ma = 1 if self.min_available is None else self.min_available
        if isinstance(ma, int):
            return ma
        return scaled(ma, expected_scale, "spec.minAvailable")

    def after_loss(self, expected_scale, selected, lost):
        """dict: the budget's state when LOST of its SELECTED running pods go."""
        need = self.desired_healthy(expected_scale, selected)
        left = selected - lost
        return {"name": self.name, "desiredHealthy": need, "healthyNow": selected,
                "healthyAfter": left, "holds": left >= need}
