"""Benchmark: our translation against heat-translator's own, same VNFD, one run.

VNFD (generated, Tacker layout): 50 VDUs, each with a VduCp on one internal
VL; 10 PlacementGroups of 5 VDUs; 10 ScalingAspects, each scaling one VDU of a
different group; one AntiAffinityRule (nfvi_node) per group, listed after the
ScalingAspects. So every rule has members at the top level and inside an
AutoScalingGroup nested template.

The VNFD is parsed once (tosca-parser is the same for both). Timed: building
``TOSCATranslator`` and ``translate_to_yaml_files_dict`` - the translation
Tacker's v1 path runs - with the extension registered ("ours") and after
``unregister()`` ("heat-translator"), in interleaved pairs. The measure is
the CPU time of this process (on a shared machine, wall time mostly measures
the neighbours); wall time is printed too. The headline ratio is the median
of the per-pair ratios. Goal: ratio <= 1.2. Exit status 1 if over.

    python benchmarks/bench_translate.py [--rounds 31]
"""
import argparse
import gc
import os
import platform
import statistics
import sys
import tempfile
import time

import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
# The test data with the real ETSI SOL001 types (from the installed tacker)
# next to the provider types that import them by relative path.
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "translator"))
from translate_helpers import DEFINITIONS  # noqa: E402
GOAL_RATIO = 1.2
N_VDUS, N_GROUPS, N_ASPECTS = 50, 10, 10


def vnfd():
    """The benchmark VNFD as a dict (imports absolute)."""
    nodes = {"VNF": {"type": "company.provider.VNF",
                     "properties": {"flavour_description": "benchmark"}},
             "internalVL1": {
                 "type": "tosca.nodes.nfv.VnfVirtualLink",
                 "properties": {
                     "connectivity_type": {"layer_protocols": ["ipv4"]},
                     "vl_profile": {
                         "max_bitrate_requirements": {"root": 1048576, "leaf": 1048576},
                         "min_bitrate_requirements": {"root": 1048576, "leaf": 1048576},
                         "virtual_link_protocol_data": [{
                             "associated_layer_protocol": "ipv4",
                             "l3_protocol_data": {"ip_version": "ipv4",
                                                  "cidr": "10.10.0.0/16"}}]}}}}
    for i in range(N_VDUS):
        vdu = "VDU%02d" % i
        nodes[vdu] = {
            "type": "tosca.nodes.nfv.Vdu.Compute",
            "properties": {"name": vdu, "description": vdu,
                           "vdu_profile": {"min_number_of_instances": 1,
                                           "max_number_of_instances": 3}},
            "capabilities": {"virtual_compute": {"properties": {
                "virtual_memory": {"virtual_mem_size": "512 MB"},
                "virtual_cpu": {"num_virtual_cpu": 1},
                "virtual_local_storage": [{"size_of_storage": "3 GB"}]}}}}
        nodes[vdu + "_CP1"] = {"type": "tosca.nodes.nfv.VduCp",
                               "properties": {"layer_protocols": ["ipv4"], "order": 0},
                               "requirements": [{"virtual_binding": vdu},
                                                {"virtual_link": "internalVL1"}]}
    size = N_VDUS // N_GROUPS
    groups = {"group%02d" % g: {
        "type": "tosca.groups.nfv.PlacementGroup",
        "properties": {"description": "group %d" % g},
        "members": ["VDU%02d" % (g * size + k) for k in range(size)]}
        for g in range(N_GROUPS)}
    scaled = ["VDU%02d" % (a * size) for a in range(N_ASPECTS)]
    policies = [{"scaling_aspects": {
        "type": "tosca.policies.nfv.ScalingAspects",
        "properties": {"aspects": {
            v + "_scale": {"name": v + "_scale", "description": v, "max_scale_level": 2,
                           "step_deltas": ["delta_1"]} for v in scaled}}}}]
    for v in scaled:
        policies.append({v + "_initial_delta": {
            "type": "tosca.policies.nfv.VduInitialDelta",
            "properties": {"initial_delta": {"number_of_instances": 1}}, "targets": [v]}})
        policies.append({v + "_scaling_aspect_deltas": {
            "type": "tosca.policies.nfv.VduScalingAspectDeltas",
            "properties": {"aspect": v + "_scale",
                           "deltas": {"delta_1": {"number_of_instances": 1}}},
            "targets": [v]}})
    for g in range(N_GROUPS):
        policies.append({"anti_affinity_%02d" % g: {
            "type": "tosca.policies.nfv.AntiAffinityRule",
            "targets": ["group%02d" % g], "properties": {"scope": "nfvi_node"}}})
    return {
        "tosca_definitions_version": "tosca_simple_yaml_1_2",
        "description": "bench_translate VNFD",
        "imports": [os.path.join(DEFINITIONS, f) for f in (
            "etsi_nfv_sol001_common_types.yaml", "etsi_nfv_sol001_vnfd_types.yaml",
            "hwaffinity_test_types.yaml")],
        "topology_template": {
            "substitution_mappings": {"node_type": "company.provider.VNF",
                                      "properties": {"flavour_id": "simple"}},
            "node_templates": nodes, "groups": groups, "policies": policies}}


def machine():
    cpu = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s, %d CPUs, %s %s, Python %s" % (cpu, os.cpu_count() or 0, platform.system(),
                                             platform.release(), platform.python_version())


def versions():
    from importlib import metadata
    return ", ".join("%s %s" % (d, metadata.version(d))
                     for d in ("heat-translator", "tosca-parser"))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=31,
                        help="interleaved pairs of timed translations (default 31)")
    args = parser.parse_args(argv)

    from translator.hot.tosca_translator import TOSCATranslator

    from tacker_hwaffinity import translator
    from tacker_hwaffinity.translator import loader, run

    run.quiet_libraries()
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "bench_vnfd.yaml")
        with open(path, "w") as f:
            yaml.safe_dump(vnfd(), f)
        t0 = time.perf_counter()
        with loader.open_vnfd(path) as loaded:
            tosca = run.parse(loaded)
        parse_s = time.perf_counter() - t0
        params = loaded.parsed_params

    def once(registered):
        (translator.register if registered else translator.unregister)()
        gc.collect()
        cpu, wall = time.process_time(), time.perf_counter()
        files = TOSCATranslator(tosca, dict(params)).translate_to_yaml_files_dict("main.yaml")
        return time.process_time() - cpu, time.perf_counter() - wall, files

    # Warm up both, and check that ours did its job on this VNFD.
    once(False)
    our_files = once(True)[2]
    main_hot = yaml.safe_load(our_files["main.yaml"])
    groups = [n for n, r in main_hot["resources"].items()
              if r["type"] == "OS::Nova::ServerGroup"]
    assert len(groups) == N_GROUPS and len(our_files) == N_ASPECTS + 1, "bad translation"

    # Interleaved pairs; the order inside a pair alternates. CPU time of this
    # process is the measure (other load on the machine inflates wall time).
    ours, stock, pair_ratios, wall = [], [], [], {"ours": [], "stock": []}
    for i in range(args.rounds):
        pair = {}
        for registered in ((False, True) if i % 2 == 0 else (True, False)):
            cpu, elapsed, _ = once(registered)
            pair[registered] = cpu
            wall["ours" if registered else "stock"].append(elapsed)
        stock.append(pair[False])
        ours.append(pair[True])
        pair_ratios.append(pair[True] / pair[False])
    translator.register()

    ratio = statistics.median(pair_ratios)
    print("machine:          %s" % machine())
    print("libraries:        %s" % versions())
    print("VNFD:             %d VDUs, %d PlacementGroups, %d ScalingAspects, %d "
          "AntiAffinityRules (tosca-parser: %.0f ms, once, not timed below)"
          % (N_VDUS, N_GROUPS, N_ASPECTS, N_GROUPS, parse_s * 1000))
    print("timed:            TOSCATranslator(...).translate_to_yaml_files_dict(), "
          "%d interleaved pairs, CPU time" % args.rounds)
    for label, values, key in (("heat-translator:", stock, "stock"), ("ours:", ours, "ours")):
        print("%-17s %.1f ms median, %.1f ms min (wall median %.1f ms)"
              % (label, statistics.median(values) * 1000, min(values) * 1000,
                 statistics.median(wall[key]) * 1000))
    print("ratio:            %.3f median of pairs, %.3f of minimums (goal <= %.1f) %s"
          % (ratio, min(ours) / min(stock), GOAL_RATIO,
             "OK" if ratio <= GOAL_RATIO else "OVER"))
    return 0 if ratio <= GOAL_RATIO else 1


if __name__ == "__main__":
    sys.exit(main())
