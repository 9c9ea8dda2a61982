"""``hwaffinity audit`` reads any of the three host labels (issue #41 item 2): with
``--topology-key auto`` (the default) the first of CIS-node,
topology.openstack.org/host-id, topology.scs.community/host-id that a node carries;
a warning when the labels group the nodes differently."""
import json

import pytest
import yaml

from tacker_hwaffinity.audit import hostkey
from tacker_hwaffinity.cli.main import main
from tacker_hwaffinity.constants import (
    DEFAULT_HOST_LABEL, OPENSTACK_HOST_ID_LABEL, SCS_HOST_ID_LABEL)
from tests.audit.helpers import anti, pod
from tests.builders import node

OCCM, SCS = OPENSTACK_HOST_ID_LABEL, SCS_HOST_ID_LABEL


@pytest.mark.parametrize("carried, chosen", [
    ([], DEFAULT_HOST_LABEL),                          # none: the default, as before
    ([SCS], SCS),
    ([OCCM, SCS], OCCM),
    ([SCS, OCCM, DEFAULT_HOST_LABEL], DEFAULT_HOST_LABEL),
])
def test_auto_takes_the_first_key_in_the_documented_order(carried, chosen):
    nodes = [node("n%d" % i, {k: "h"}) for i, k in enumerate(carried)] + [node("x")]
    assert hostkey.choose(nodes) == chosen
    assert hostkey.choose(nodes, "example.org/rack") == "example.org/rack"   # asked


def test_labels_that_group_alike_do_not_warn():
    nodes = [node("a", {"CIS-node": "h1", OCCM: "x1", SCS: "x1"}),
             node("b", {"CIS-node": "h1", OCCM: "x1", SCS: "x1"}),
             node("c", {"CIS-node": "h2", OCCM: "x2"}),       # no SCS label: not compared
             node("d", {OCCM: "x3"})]
    assert hostkey.disagreements(nodes) == []


def test_a_label_that_did_not_follow_a_move_is_named():
    # a's VM moved to b's host: CIS-node followed, OCCM's label did not
    nodes = [node("a", {"CIS-node": "h2", OCCM: "x1"}),
             node("b", {"CIS-node": "h2", OCCM: "x2"}),
             node("c", {"CIS-node": "h3", OCCM: "x3"})]
    (w,) = hostkey.disagreements(nodes)
    assert w.startswith("host labels disagree: 1 host(s) of CIS-node are several hosts by "
                        "%s (CIS-node=h2: a on %s=x1, b on %s=x2)" % (OCCM, OCCM, OCCM))


def test_both_directions_and_a_bounded_list():
    nodes = []
    for i in range(5):      # CIS-node h<i> holds two nodes, which the SCS label splits
        nodes += [node("p%d" % i, {"CIS-node": "h%d" % i, SCS: "s%d" % i}),
                  node("q%d" % i, {"CIS-node": "h%d" % i, SCS: "t%d" % i})]
    nodes += [node("r", {"CIS-node": "h7", SCS: "s9"}), node("s", {"CIS-node": "h8", SCS: "s9"})]
    found = hostkey.disagreements(nodes)
    assert len(found) == 2
    assert "5 host(s) of CIS-node are several hosts by %s" % SCS in found[0]
    assert found[0].count("CIS-node=h") == hostkey.MAX_NAMED and "and 2 more" in found[0]
    assert "1 host(s) of %s are several hosts by CIS-node (%s=s9: r on CIS-node=h7, " \
           "s on CIS-node=h8)" % (SCS, SCS) in found[1]


def _cluster(tmp_path, labels):
    """Two nodes labelled LABELS[i], a replica of an anti-affine StatefulSet on each."""
    objs = [node("w%d" % i, lab) for i, lab in enumerate(labels)] + [
        pod("s-%d" % i, "w%d" % i, {"app": "s"}, ("StatefulSet", "s"),
            affinity=anti("s", key=OCCM)) for i in range(len(labels))]
    p = tmp_path / "c.yaml"
    p.write_text(yaml.safe_dump_all(objs))
    return str(p)


def test_the_cli_audits_an_occm_cluster_on_its_host_id_label(tmp_path, capsys):
    path = _cluster(tmp_path, [{OCCM: "x1"}, {OCCM: "x2"}])
    assert main(["audit", "--cluster", path, "-o", "json", "--max-loss", "50%",
                 "--fail-on", "intent-unmet"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["topologyKey"] == OCCM and captured.err == ""
    assert any("host key %s" % OCCM in n for n in doc["notes"])
    (w,) = doc["workloads"]
    assert w["intentMet"] is True and w["lossRatio"] == 0.5


def test_the_cli_warns_when_the_labels_disagree_and_keeps_an_explicit_key(tmp_path, capsys):
    path = _cluster(tmp_path, [{"CIS-node": "h1", OCCM: "x1"}, {"CIS-node": "h1", OCCM: "x2"}])
    assert main(["audit", "--cluster", path, "--topology-key", OCCM, "-o", "json"]) == 0
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    assert doc["topologyKey"] == OCCM and not any("host key" in n for n in doc["notes"])
    assert captured.err.startswith("Warning: host labels disagree: 1 host(s) of CIS-node")
    assert any(w.startswith("host labels disagree") for w in doc["warnings"])
