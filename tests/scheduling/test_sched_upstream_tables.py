"""Conformance: kube-scheduler's own plugin test tables, transcribed as data, run
against ``explain``.

Each file in ``upstream/`` names the upstream test file and commit it was
transcribed from. A case runs the plugin under test alone, as its upstream test
does: for a filter table, that plugin is the only filter and each node's reasons
must equal upstream's status; for a score table, the nodes upstream scores are
the feasible ones (the others are made unschedulable, with NodeUnschedulable as
the only filter) and each node's normalised score of that plugin must equal
upstream's. Plugin arguments go through our KubeSchedulerConfiguration parser,
so v1 defaulting applies; cases that only hold without it, or that need a
feature gate off (or an alpha one on), are listed with ``omit`` and a reason,
and not run. Upstream's unit tests build pods without the API server's
validation; a case whose pod the API server refuses is marked ``apiRejects``
and checks that we refuse it with that message.
"""
import copy
import glob
import os

import pytest
import yaml

from tacker_hwaffinity.errors import InputError

from .helpers import config, run

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "upstream")
TABLES = sorted(glob.glob(os.path.join(HERE, "*.yaml")))
OMIT_REASONS = ("feature gate", "feature (", "v1 defaulting", "enableMatchLabelKeys=false")


def _load():
    cases, omitted = [], []
    for path in TABLES:
        with open(path) as f:
            table = yaml.safe_load(f)
        seen = {}
        for case in table["cases"]:
            name = case["name"]
            seen[name] = seen.get(name, 0) + 1
            if seen[name] > 1:  # Go's t.Run suffix for a repeated name
                name = "%s#%02d" % (name, seen[name] - 1)
            entry = (os.path.basename(path), table["plugin"], table["point"], name, case)
            (omitted if case.get("omit") else cases).append(entry)
    return cases, omitted


CASES, OMITTED = _load()


def _unique_nodes(nodes):
    """Upstream's snapshot keeps the last node of a name."""
    by_name = {}
    for n in nodes:
        by_name[n["metadata"]["name"]] = n
    return list(by_name.values())


def _config(plugin, point, args):
    plugins = {"filter": {"disabled": [{"name": "*"}]},
               "score": {"disabled": [{"name": "*"}]}}
    if point == "filter":
        plugins["filter"]["enabled"] = [{"name": plugin}]
    else:
        plugins["filter"]["enabled"] = [{"name": "NodeUnschedulable"}]
        plugins["score"]["enabled"] = [{"name": plugin}]
    return config(plugins=plugins,
                  plugin_config=[{"name": plugin, "args": args}] if args is not None else None)


def test_tables_are_there_and_omissions_say_why():
    assert {os.path.basename(p) for p in TABLES} >= {
        "pts_filter.yaml", "pts_score.yaml", "least_allocated.yaml", "most_allocated.yaml",
        "requested_to_capacity_ratio.yaml", "balanced_allocation.yaml",
        "taint_toleration.yaml", "image_locality.yaml"}
    assert len(CASES) + len(OMITTED) == 130 and len(OMITTED) <= 10
    for _, _, _, name, case in OMITTED:
        assert any(r in case["omit"] for r in OMIT_REASONS), (name, case["omit"])


@pytest.mark.parametrize("table,plugin,point,name,case", CASES,
                         ids=["%s:%s" % (c[0], c[3]) for c in CASES])
def test_upstream_case(table, plugin, point, name, case):
    nodes = _unique_nodes(copy.deepcopy(case["nodes"]))
    feasible = set(case.get("feasible") or [n["metadata"]["name"] for n in nodes])
    if point == "score":
        for n in nodes:
            if n["metadata"]["name"] not in feasible:
                n.setdefault("spec", {})["unschedulable"] = True
    cfg = _config(plugin, point, case.get("args"))
    others = list(case.get("existingPods") or []) + list(case.get("objects") or [])
    if case.get("apiRejects"):
        with pytest.raises(InputError) as e:
            run(nodes, case["pod"], others, cfg=cfg)
        assert case["apiRejects"] in str(e.value)
        return
    if case.get("wantError"):
        with pytest.raises(InputError) as e:
            run(nodes, case["pod"], others, cfg=cfg)
        assert e.value.field.endswith(case["wantError"].split(":")[0]), e.value
        return
    result = run(nodes, case["pod"], others, cfg=cfg)
    if point == "filter":
        got = {n: (None if r["feasible"] else r["reasons"]) for n, r in result.items() if n}
        want = {n: (None if r is None else [r]) for n, r in case["want"].items()}
        assert got == want
        return
    got = {n: r["scores"][plugin] for n, r in result.items() if n and n in feasible}
    want = ({n: 0 for n in feasible} if case.get("wantSkip") else case["want"])
    assert got == want
