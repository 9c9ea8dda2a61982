"""Hypothesis strategies for inter-pod terms, pods and namespaces, shared by the tests
that compare a view of the cluster (extender, controller) with the engine."""
from hypothesis import strategies as st

from tacker_hwaffinity.scheduling.model import NS_NAME_LABEL
from tests.builders import namespace, term, weighted

H = "kubernetes.io/hostname"
Z = "topology.kubernetes.io/zone"
TOPO = [H, Z]
LKEYS = ["app", "ver", "tier"]
LVALUES = {"app": ["x", "y"], "ver": ["1", "3", "5", "10", "x"], "tier": ["a", "b"]}
VERSIONS = ["1", "3", "5", "10", "1", "3", "5", "10", "x"]
NAMESPACES = [namespace("default", {"env": "prod"}), namespace("other", {"env": "dev"})]

pod_labels = st.fixed_dictionaries(
    {"ver": st.sampled_from(VERSIONS)},
    optional={k: st.sampled_from(v) for k, v in LVALUES.items() if k != "ver"})
OPERATORS = ["In", "NotIn", "Exists", "DoesNotExist"] + ["Gt", "Lt"] * 3


@st.composite
def expression(draw):
    key = draw(st.sampled_from(LKEYS + ["ver"] * 3))
    op = draw(st.sampled_from(OPERATORS))
    if op in ("Gt", "Lt"):
        values = [draw(st.sampled_from(["0", "2", "4", "7", "11"]))]
    elif op in ("In", "NotIn"):
        values = draw(st.lists(st.sampled_from(LVALUES[key]), min_size=1, max_size=2,
                               unique=True))
    else:
        values = []
    return {"key": key, "operator": op, "values": values}


@st.composite
def a_term(draw):
    exprs = draw(st.sampled_from([0, 1, 1, 2]).flatmap(
        lambda n: st.lists(expression(), min_size=n, max_size=n)))
    ml = {} if exprs and draw(st.booleans()) else draw(st.fixed_dictionaries(
        {}, optional={"app": st.sampled_from(LVALUES["app"])}))
    extra = {}
    scope = draw(st.sampled_from(["own"] * 5 + ["list", "selector", "all"]))
    if scope == "list":
        extra["namespaces"] = draw(st.lists(st.sampled_from(["default", "other", "gone"]),
                                            min_size=1, max_size=2, unique=True))
    elif scope == "selector":
        extra["ns_selector"] = {"matchLabels": draw(st.sampled_from([
            {"env": "prod"}, {"env": "dev"}, {NS_NAME_LABEL: "other"},
            {NS_NAME_LABEL: "default"}]))}
    elif scope == "all":
        extra["ns_selector"] = {}
    return term(draw(st.sampled_from(TOPO)), ml or None, exprs, **extra)


def term_lists(max_size=2, min_size=0):
    return st.lists(a_term(), min_size=min_size, max_size=max_size)


def weighted_lists(min_size=0):
    return st.lists(st.builds(weighted, st.integers(1, 100), a_term()), min_size=min_size,
                    max_size=2)


def maybe(strategy, chance=3):
    """STRATEGY one time in CHANCE, else None."""
    return st.integers(1, chance).flatmap(lambda n: strategy if n == 1 else st.none())
