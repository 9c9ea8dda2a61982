"""Topology from recorded sysfs trees and from machine YAML; the pool tree."""
import os

import pytest
import yaml

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.numa.cpuset import format_list, parse_list
from tacker_hwaffinity.numa.pools import build_pools
from tacker_hwaffinity.numa.sysfs import discover, load
from tacker_hwaffinity.numa.topology import machine_from_yaml

from .conftest import DATA


def test_one_socket_smt_offline_no_die_id(sysfs):
    m = discover(sysfs("sysfs-1socket.txt"))
    assert sorted(m.cpus) == list(range(8))
    assert m.offline == {7} and m.online == set(range(7))
    assert m.cpus[0].siblings == (0, 4)
    assert m.cpus[3].siblings == (3,)          # its sibling 7 is offline
    assert m.cpus[4].core == m.cpus[0].core
    assert {c.die for c in m.cpus.values() if c.online} == {0}
    assert m.nodes[0].cpus == set(range(7)) and m.nodes[0].memory == 16 * 2 ** 30
    pools = build_pools(m)
    assert [p.name for p in pools] == ["socket #0"]     # single socket: the socket is the root
    assert pools[0].cpus == set(range(7))


def test_two_socket_isolated_and_distances(sysfs):
    m = discover(sysfs("sysfs-2socket.txt"))
    assert m.sockets() == [0, 1]
    assert m.isolated == {2, 3}
    assert m.offline == {31}
    assert m.cpus[15].siblings == (15,)
    assert m.cpus[1].siblings == (1, 17)
    assert m.distance(0, 1) == 21 and m.distance(1, 1) == 10
    assert m.nodes[1].cpus == set(range(8, 16)) | set(range(24, 31))
    pools = build_pools(m)
    # a NUMA pool that would be the only NUMA child of its socket is omitted
    assert [(p.id, p.name, p.depth) for p in pools] == [
        (0, "socket #0", 1), (1, "socket #1", 1), (2, "root", 0)]
    assert pools[0].isolated == {2, 3} and 2 not in pools[0].sharable


def test_four_socket_dies_and_memory_only_node(sysfs):
    m = discover(sysfs("sysfs-4socket.txt"))
    assert len(m.sockets()) == 4 and len(m.cpu_nodes()) == 8
    assert m.dies(0) == [0, 1]
    assert [n.id for n in m.memory_only_nodes()] == [8]
    pools = build_pools(m)
    names = [p.name for p in pools]
    assert names[:3] == ["die #0/0", "die #0/1", "socket #0"] and names[-1] == "root"
    assert len(pools) == 13
    # the PMEM node is attached to the closest pool (node 0's die) and its ancestors
    assert pools[0].mem_nodes == {0, 8} and 8 in pools[-1].mem_nodes
    assert 8 not in pools[1].mem_nodes
    assert pools[0].memory == 80 * 2 ** 30
    assert pools[-1].cpus == m.online and 63 not in pools[-1].cpus


def test_reserved_cpus_as_a_list_or_a_quantity(sysfs):
    """As the kubelet reads reservedSystemCPUs: a list as given; a quantity takes the
    lowest usable CPUs (online, not isolated) that hold it, rounded up."""
    root = sysfs("sysfs-2socket.txt")
    assert load(root, "0-1,8").reserved == {0, 1, 8}
    assert load(root, "2500m").reserved == {0, 1, 4}        # 2, 3 are isolated
    assert load(root).reserved == frozenset()


@pytest.mark.parametrize("text,message", [
    ("0-1,x", "'x' is not a CPU list item"), ("64", "unknown CPUs [64]"),
    ("1000.0", "more than the 29 usable CPUs"),
])
def test_reserved_cpus_errors_name_the_flag(sysfs, text, message):
    with pytest.raises(InputError) as e:
        load(sysfs("sysfs-2socket.txt"), text)
    assert message in str(e.value) and e.value.field == "--reserved-cpus"


def test_server_pool_ids_post_order():
    m = machine_from_yaml(yaml.safe_load(open(os.path.join(DATA, "server.yaml"))))
    assert [p.name for p in build_pools(m)] == [
        "NUMA node #0", "NUMA node #2", "socket #0", "NUMA node #1", "NUMA node #3",
        "socket #1", "root"]


def test_missing_required_topology_file(sysfs):
    root = sysfs("sysfs-1socket.txt")
    os.remove(os.path.join(root, "devices/system/cpu/cpu2/topology/core_id"))
    with pytest.raises(InputError, match="cpu2/topology/core_id"):
        discover(root)


def test_no_cpus(tmp_path):
    with pytest.raises(InputError, match="no CPUs"):
        discover(str(tmp_path))


def test_asymmetric_distances_rejected(sysfs):
    root = sysfs("sysfs-2socket.txt")
    with open(os.path.join(root, "devices/system/node/node0/distance"), "w") as f:
        f.write("10 20\n")
    with pytest.raises(InputError, match="asymmetric"):
        discover(root)


MACHINE = """
name: small
threadsPerCore: 2
sockets:
  - id: 0
    nodes:
      - {id: 0, cpus: "0-3,8-11", memory: 8Gi}
  - id: 1
    nodes:
      - {id: 1, cpus: "4-7,12-15", memory: 8Gi}
isolated: 3
offline: 15
reserved: "0"
"""


def test_machine_yaml():
    m = machine_from_yaml(yaml.safe_load(MACHINE))
    assert m.cpus[0].siblings == (0, 8) and m.cpus[7].siblings == (7, 15)
    assert m.offline == {15} and m.isolated == {3} and m.reserved == {0}
    assert m.distance(0, 1) == 21 and m.nodes[1].memory == 8 * 2 ** 30
    pools = build_pools(m)
    assert pools[0].reserved == {0} and 0 not in pools[0].sharable


@pytest.mark.parametrize("patch,field", [
    ({"sockets": []}, "sockets"),
    ({"bogus": 1}, "bogus"),
    ({"threadsPerCore": "two"}, "threadsPerCore"),
    ({"isolated": "99"}, "isolated"),
    ({"sockets": [{"id": 0, "nodes": [{"id": 0, "cpus": "0-1"}, {"id": 1, "cpus": "1-2"}]}]},
     "sockets[0].nodes[1].cpus"),
    ({"sockets": [{"id": 0, "nodes": [{"id": 0, "cpus": "x"}]}]}, "sockets[0].nodes[0].cpus"),
    ({"sockets": [{"id": 0, "nodes": [{"id": 0, "cpus": "0", "memory": "lots"}]}]},
     "sockets[0].nodes[0].memory"),
    ({"distances": [[10]]}, "distances"),
])
def test_machine_yaml_errors_name_the_field(patch, field):
    doc = yaml.safe_load(MACHINE)
    doc.update(patch)
    with pytest.raises(InputError) as e:
        machine_from_yaml(doc, "m.yaml")
    assert e.value.field == field and e.value.source == "m.yaml"


@pytest.mark.parametrize("text,ids", [("", set()), ("0", {0}), ("0-2,5", {0, 1, 2, 5}),
                                      ("0-1,3-4\n", {0, 1, 3, 4})])
def test_cpu_lists(text, ids):
    assert parse_list(text) == ids
    assert parse_list(format_list(ids)) == ids


@pytest.mark.parametrize("bad", ["a", "3-1", "1-", "-1", "1,,2"])
def test_bad_cpu_lists(bad):
    with pytest.raises(ValueError):
        parse_list(bad)
