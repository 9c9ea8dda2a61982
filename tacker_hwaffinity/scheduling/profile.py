"""KubeSchedulerConfiguration (kubescheduler.config.k8s.io/v1) -> Framework.

The first profile's plugin sets are merged with the v1 defaults exactly as
kube-scheduler does (defaults live under ``multiPoint``; an extension
point's ``disabled`` list, ``'*'`` included, removes them there; plugins
enabled at a specific point override their multiPoint entry and come
first). Every default plugin that filters or scores on what a snapshot holds is
modelled; the volume, DRA and port plugins are named in a plan's notes when a
pod uses what they act on (``model.PodSpecInfo.unmodelled``).
"""
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, TypeAlias, cast

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.scheduling import plugin_args, registry, selectors, spreading
from tacker_hwaffinity.scheduling.framework import Framework
from tacker_hwaffinity.scheduling.model import WeightedNodeTerms, parse_preferred_node_terms
from tacker_hwaffinity.scheduling.plugin_args import FitArgs, check_fields
from tacker_hwaffinity.scheduling.plugins import FilterPlugin, ScorePlugin, noderesources
from tacker_hwaffinity.scheduling.spreading import RawConstraint

_GROUP = "kubescheduler.config.k8s.io/"
API_VERSION = _GROUP + "v1"
# kube-scheduler's v1 default plugins, in order, with their score weights.
DEFAULT_MULTIPOINT = (
    ("SchedulingGates", 0), ("PrioritySort", 0), ("NodeUnschedulable", 0), ("NodeName", 0),
    ("TaintToleration", 3), ("NodeAffinity", 2), ("NodePorts", 0), ("NodeResourcesFit", 1),
    ("VolumeRestrictions", 0), ("NodeVolumeLimits", 0), ("VolumeBinding", 0),
    ("VolumeZone", 0), ("PodTopologySpread", 2), ("InterPodAffinity", 2),
    ("DefaultPreemption", 0), ("NodeResourcesBalancedAllocation", 1), ("ImageLocality", 1),
    ("DefaultBinder", 0))
OTHER_IN_TREE = ("DynamicResources", "NodeResourcesLeastAllocated", "NodeResourcesMostAllocated",
                 "RequestedToCapacityRatio", "EBSLimits", "GCEPDLimits", "AzureDiskLimits",
                 "CinderLimits", "NodeLabel", "ServiceAffinity", "SelectorSpread",
                 "NodePreferAvoidPods")
KNOWN_PLUGINS = {name for name, _ in DEFAULT_MULTIPOINT} | set(OTHER_IN_TREE)
# Extension points each modelled plugin implements (what we model of it).
MODELLED_FILTERS = ("NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity",
                    "NodeResourcesFit", "PodTopologySpread", "InterPodAffinity")
MODELLED_SCORES = ("TaintToleration", "NodeAffinity", "NodeResourcesFit", "PodTopologySpread",
                   "InterPodAffinity", "NodeResourcesBalancedAllocation", "ImageLocality")
EXTENSION_POINTS = ("preEnqueue", "queueSort", "preFilter", "filter", "postFilter", "preScore",
                    "score", "reserve", "permit", "preBind", "bind", "postBind", "multiPoint")
_TOP_FIELDS = {"apiVersion", "kind", "parallelism", "leaderElection", "clientConnection",
               "healthzBindAddress", "metricsBindAddress", "debuggingConfiguration",
               "enableProfiling", "enableContentionProfiling", "percentageOfNodesToScore",
               "podInitialBackoffSeconds", "podMaxBackoffSeconds", "profiles", "extenders",
               "delayCacheUntilActive"}
_PROFILE_FIELDS = {"schedulerName", "percentageOfNodesToScore", "plugins", "pluginConfig"}
# Plugins by name with their weights, in order.
WeightedPlugins: TypeAlias = list[tuple[str, int]]
# One extension point's plugin set: (enabled, names disabled).
PluginSet: TypeAlias = tuple[WeightedPlugins, list[str]]


def _percentage(raw: Mapping[str, Any], field: str) -> int | None:
    value: object = raw.get("percentageOfNodesToScore")
    if value is None:
        return None
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= 100:
        raise InputError("not in valid range [0-100]", field=field)
    return value


def _extender_ignored_resources(extenders: object) -> list[str]:
    """The names of the extenders' managedResources with ``ignoredByScheduler: true``:
    kube-scheduler sets them as NodeResourcesFit's ignoredResources of every profile."""
    if extenders is None:
        return []
    if not isinstance(extenders, list):
        raise InputError("expected a list of extenders", field="extenders")
    out: list[str] = []
    for i, ext in enumerate(extenders):
        f = "extenders[%d].managedResources" % i
        managed = ext.get("managedResources") if isinstance(ext, dict) else None
        if managed is None:
            continue
        if not isinstance(managed, list):
            raise InputError("expected a list of resources", field=f)
        for j, r in enumerate(managed):
            check_fields(r, {"name", "ignoredByScheduler"}, "%s[%d]" % (f, j))
            if not isinstance(r.get("name"), str) or not r["name"]:
                raise InputError("expected a resource name", field="%s[%d].name" % (f, j))
            flag = r.get("ignoredByScheduler", False)
            if not isinstance(flag, bool):
                raise InputError("expected true or false",
                                 field="%s[%d].ignoredByScheduler" % (f, j))
            if flag:
                out.append(r["name"])
    return out


def _plugin_list(raw: object, field: str, with_weight: bool) -> WeightedPlugins:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise InputError("expected a list of plugins", field=field)
    out: WeightedPlugins = []
    for i, p in enumerate(raw):
        f = "%s[%d]" % (field, i)
        check_fields(p, {"name", "weight"} if with_weight else {"name"}, f)
        name = p.get("name")
        if not isinstance(name, str) or not name:
            raise InputError("plugin needs a name", field=f + ".name")
        if name != "*" and name not in KNOWN_PLUGINS:
            raise InputError("plugin %r does not exist in kube-scheduler's registry" % name,
                             field=f + ".name")
        w = p.get("weight", 0)
        if not isinstance(w, int) or isinstance(w, bool) or w < 0:
            raise InputError("weight must be a non-negative integer", field=f + ".weight")
        out.append((name, w))
    return out


class Profile:
    """Which modelled plugins run, in which order, with which weights and args."""

    def __init__(self, raw: Mapping[str, Any] | None = None, source: str | None = None) -> None:
        self.source = source
        self.notes: list[str] = []
        self.hard_weight: int = 1
        self.ignore_existing_preferred: bool = False
        self.added_required: selectors.NodeSelector | None = None
        self.added_preferred: WeightedNodeTerms = ()
        self.percentage_of_nodes_to_score: int | None = None     # None/0: adaptive
        self.spread_defaults: tuple[RawConstraint, ...] = spreading.SYSTEM_DEFAULTS
        self.spread_system_defaulted: bool = True
        self.fit: FitArgs = {}  # NodeResourcesFit constructor arguments from its args
        self.balanced_resources: tuple[tuple[str, int], ...] = noderesources.DEFAULT_RESOURCES
        points: dict[str, PluginSet] = {}
        profile: dict[str, Any] = {}
        try:
            if raw is not None:
                profile = self._parse_top(raw)
            plugins = profile.get("plugins") or {}
            check_fields(plugins, set(EXTENSION_POINTS), "profiles[0].plugins")
            for ep in EXTENSION_POINTS:
                pset = plugins.get(ep) or {}
                f = "profiles[0].plugins.%s" % ep
                check_fields(pset, {"enabled", "disabled"}, f)
                points[ep] = (_plugin_list(pset.get("enabled"), f + ".enabled", True),
                              [n for n, _ in _plugin_list(pset.get("disabled"), f + ".disabled",
                                                          False)])
            self._parse_plugin_config(profile.get("pluginConfig"))
            ignored = _extender_ignored_resources(raw.get("extenders") if raw else None)
            if ignored:     # kube-scheduler: the extenders' list replaces the args' own
                self.fit = {**self.fit, "ignored": tuple(ignored)}
        except InputError as e:
            raise e.located(source=source, obj="KubeSchedulerConfiguration")
        multipoint = _merge(DEFAULT_MULTIPOINT, *points["multiPoint"])
        self.filters = [n for n, _ in _expand(multipoint, points["filter"], MODELLED_FILTERS)]
        self.scores = _expand(multipoint, points["score"], MODELLED_SCORES)
        self.preemption = any(n == "DefaultPreemption" for n, _ in
                              _expand(multipoint, points["postFilter"], ("DefaultPreemption",)))

    def _parse_top(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        check_fields(raw, _TOP_FIELDS, "")
        version = raw.get("apiVersion")
        if isinstance(version, str) and version.startswith(_GROUP + "v1beta"):
            # not read as v1: the beta versions default other plugins and weights
            # (kube-scheduler 1.19-1.24), which the engine does not model
            raise InputError("expected %s, got %r: the beta versions are kube-scheduler "
                             "1.19-1.24's, whose default plugins and weights differ from "
                             "v1's (1.25+), the only ones modelled; give the same profile "
                             "and extenders as %s" % (API_VERSION, version, API_VERSION),
                             field="apiVersion")
        if version != API_VERSION:
            raise InputError("expected %s, got %r" % (API_VERSION, version),
                             field="apiVersion")
        if raw.get("kind") != "KubeSchedulerConfiguration":
            raise InputError("expected KubeSchedulerConfiguration", field="kind")
        if raw.get("extenders"):
            self.notes.append("scheduler extenders are configured but not modelled")
        profiles = raw.get("profiles") or [{}]
        if not isinstance(profiles, list):
            raise InputError("expected a list", field="profiles")
        if len(profiles) > 1:
            self.notes.append("only the first profile is used")
        first = check_fields(profiles[0], _PROFILE_FIELDS, "profiles[0]")
        top = _percentage(raw, "percentageOfNodesToScore")
        own = _percentage(first, "profiles[0].percentageOfNodesToScore")
        # the profile's value wins when it is set (upstream: a non-nil pointer)
        self.percentage_of_nodes_to_score = own if own is not None else top
        return first

    def _parse_plugin_config(self, raw: object) -> None:
        if raw is None:
            return
        if not isinstance(raw, list):
            raise InputError("expected a list", field="profiles[0].pluginConfig")
        for i, pc in enumerate(raw):
            f = "profiles[0].pluginConfig[%d]" % i
            check_fields(pc, {"name", "args"}, f)
            args = pc.get("args") or {}
            if pc.get("name") == "InterPodAffinity":
                check_fields(args, {"apiVersion", "kind", "hardPodAffinityWeight",
                                     "ignorePreferredTermsOfExistingPods"}, f + ".args")
                w = args.get("hardPodAffinityWeight", 1)
                if not isinstance(w, int) or isinstance(w, bool) or not 0 <= w <= 100:
                    raise InputError("must be an integer in the range 0-100",
                                     field=f + ".args.hardPodAffinityWeight")
                ign = args.get("ignorePreferredTermsOfExistingPods", False)
                if not isinstance(ign, bool):
                    raise InputError("expected true or false",
                                     field=f + ".args.ignorePreferredTermsOfExistingPods")
                self.hard_weight, self.ignore_existing_preferred = w, ign
            elif pc.get("name") == "NodeAffinity":
                check_fields(args, {"apiVersion", "kind", "addedAffinity"}, f + ".args")
                self._parse_added(args.get("addedAffinity"), f + ".args.addedAffinity")
            elif pc.get("name") == "PodTopologySpread":
                self._parse_spread(args, f + ".args")
            elif pc.get("name") == "NodeResourcesFit":
                self.fit = plugin_args.fit_args(args, f + ".args")
            elif pc.get("name") == "NodeResourcesBalancedAllocation":
                check_fields(args, {"apiVersion", "kind", "resources"}, f + ".args")
                self.balanced_resources = plugin_args.resource_specs(
                    args.get("resources"), f + ".args.resources",
                    noderesources.DEFAULT_RESOURCES)

    def _parse_spread(self, args: object, field: str) -> None:
        """PodTopologySpreadArgs: defaultingType System (v1's default) or List."""
        args = check_fields(args, {"apiVersion", "kind", "defaultConstraints", "defaultingType"},
                            field)
        kind = args.get("defaultingType") or "System"
        if kind not in ("System", "List"):
            raise InputError("unsupported value %r: expected System or List" % (kind,),
                             field=field + ".defaultingType")
        defaults = spreading.parse_constraints(args.get("defaultConstraints"),
                                               field + ".defaultConstraints", default=True)
        if kind == "System" and defaults:
            raise InputError("when .defaultingType is \"System\", .defaultConstraints must "
                             "be empty", field=field + ".defaultConstraints")
        self.spread_system_defaulted = kind == "System"
        self.spread_defaults = spreading.SYSTEM_DEFAULTS if kind == "System" else defaults

    def _parse_added(self, raw: object, field: str) -> None:
        if raw is None:
            return
        raw = check_fields(raw, {"requiredDuringSchedulingIgnoredDuringExecution",
                                  "preferredDuringSchedulingIgnoredDuringExecution"}, field)
        req = raw.get("requiredDuringSchedulingIgnoredDuringExecution")
        if req is not None:
            rf = field + ".requiredDuringSchedulingIgnoredDuringExecution"
            sel = selectors.NodeSelector(req, rf)
            if sel.errors or not isinstance(req, dict):
                raise InputError(sel.errors[0] if sel.errors else "expected a node selector",
                                 field=rf)
            self.added_required = sel
        self.added_preferred = parse_preferred_node_terms(
            raw.get("preferredDuringSchedulingIgnoredDuringExecution"),
            field + ".preferredDuringSchedulingIgnoredDuringExecution")

    def framework(self) -> Framework:
        built = registry.plugins(self, list(self.filters) + [n for n, _ in self.scores])
        # MODELLED_FILTERS name filter plugins, MODELLED_SCORES score plugins (the contract's
        # test: tests/scheduling/test_plugin_contract.py)
        fw = Framework([cast(FilterPlugin, built[n]) for n in self.filters],
                       [(cast(ScorePlugin, built[n]), w) for n, w in self.scores])
        fw.percentage_of_nodes_to_score = self.percentage_of_nodes_to_score
        fw.preemption = self.preemption
        return fw


def _merge(defaults: Iterable[tuple[str, int]], enabled: WeightedPlugins,
           disabled: Sequence[str]) -> WeightedPlugins:
    """mergePluginSet: defaults minus disabled ('*' = all), overridden in place, then custom."""
    custom = {n: (n, w) for n, w in enabled}
    out: WeightedPlugins = []
    used: set[str] = set()
    if "*" not in disabled:
        for name, w in defaults:
            if name in disabled:
                continue
            if name in custom:
                out.append(custom[name])
                used.add(name)
            else:
                out.append((name, w))
    out.extend(p for p in enabled if p[0] not in used)
    return out


def _expand(multipoint: WeightedPlugins, point: PluginSet,
            implemented: tuple[str, ...]) -> WeightedPlugins:
    """Plugins (name, weight) of one extension point, among IMPLEMENTED, in upstream order."""
    enabled, disabled = point
    specific = [(n, w or 1) for n, w in enabled if n in implemented]
    names = {n for n, _ in specific}
    from_multi: WeightedPlugins = []
    if "*" not in disabled:
        from_multi = [(n, w or 1) for n, w in multipoint
                      if n in implemented and n not in disabled and n not in names]
    multi_names = {n for n, _ in multipoint}
    overrides = [p for p in specific if p[0] in multi_names]
    others = [p for p in specific if p[0] not in multi_names]
    return overrides + from_multi + others
