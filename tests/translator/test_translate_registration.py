"""register()/unregister() and Tacker's own v1 translation path.

Tacker calls ``ToscaTemplate`` -> ``TOSCATranslator`` -> ``translate()`` (which
writes the nested templates into the working directory) and then
``translate_to_yaml_files_dict`` for each AutoScalingGroup. With our
extension registered, that path alone must produce our output.
"""
import os
import pathlib

import pytest
import yaml

from tacker_hwaffinity import translator
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.translator import names
from translate_helpers import (CASES, EXPECTED, K8S_PACKAGE, parsed, scratch_dir,
                               translate_file)


@pytest.fixture
def unregistered():
    translator.unregister()
    try:
        yield
    finally:
        translator.register()


def _tacker_v1(path, flavour, workdir, monkeypatch):
    """Tacker's calls, in its order, on a flavour prepared like Tacker does."""
    from toscaparser.tosca_template import ToscaTemplate
    from toscaparser.utils import yamlparser
    from translator.hot.tosca_translator import TOSCATranslator

    from tacker_hwaffinity.translator import loader

    with loader.open_vnfd(path, flavour) as vnfd:
        # Tacker stores the VNFD as str(dict) and parses it back.
        vnfd_dict = yamlparser.simple_ordered_parse(str(vnfd.template))
        params = vnfd.parsed_params
        tosca = ToscaTemplate(parsed_params=params, a_file=False, yaml_dict_tpl=vnfd_dict,
                              local_defs=vnfd.local_defs)
    monkeypatch.chdir(workdir)
    tosca_translator = TOSCATranslator(tosca, params)
    main = tosca_translator.translate()
    nested = {}
    for res in yaml.safe_load(main)["resources"].values():
        if res["type"] == names.AUTOSCALING_GROUP:
            name = res["properties"]["resource"]["type"]
            nested[name] = tosca_translator.translate_to_yaml_files_dict(
                "0b9b7e2c" + name)[name]
    return main, nested


def test_register_is_idempotent():
    from translator.hot import translate_node_templates as tnt
    assert translator.is_registered()
    wrapped = tnt.TranslateNodeTemplates.translate
    assert translator.register() is False
    assert tnt.TranslateNodeTemplates.translate is wrapped
    assert tnt.TOSCA_TO_HOT_TYPE[names.ANTI_AFFINITY_RULE].__module__.startswith(
        "tacker_hwaffinity")


def test_unregister_restores_heat_translator():
    from translator.hot import translate_node_templates as tnt
    translate_file(os.path.join(CASES, "derived_types.yaml"))     # makes aliases
    assert tnt.TOSCA_TO_HOT_TYPE["company.policies.StrictHostAntiAffinity"]
    translator.unregister()
    try:
        _check_stock(tnt)
    finally:
        translator.register()


def _check_stock(tnt):
    assert not translator.is_registered()
    assert translator.unregister() is False
    for toscatype in names.RULE_TYPES:
        assert tnt.TOSCA_TO_HOT_TYPE[toscatype].__module__.startswith("translator.hot")
    # No alias of a derived type survives.
    assert not [k for k, v in tnt.TOSCA_TO_HOT_TYPE.items()
                if v.__module__.startswith("tacker_hwaffinity")]
    # heat-translator alone drops a PlacementGroup target silently: the bug
    # this extension exists for.
    main = yaml.safe_load(translate_file(os.path.join(CASES, "pg_targets.yaml"))["main.yaml"])
    assert names.SERVER_GROUP not in {r["type"] for r in main["resources"].values()}


def test_type_name_reused_by_another_template_is_not_hijacked():
    """A derived-rule alias from one VNFD must not capture the same type name
    meaning something else in the next VNFD translated by the process."""
    from translator.hot import translate_node_templates as tnt
    translate_file(os.path.join(CASES, "derived_types.yaml"))
    assert tnt.TOSCA_TO_HOT_TYPE["company.policies.HostAffinity"].__module__.startswith(
        "tacker_hwaffinity")
    scratch = pathlib.Path(scratch_dir())      # in DATA: the VNFD imports DATA's files
    types = scratch / "types.yaml"
    types.write_text(yaml.safe_dump({
        "tosca_definitions_version": "tosca_simple_yaml_1_2",
        "policy_types": {"company.policies.HostAffinity": {
            "derived_from": "tosca.policies.nfv.VduInitialDelta"}}}))
    data = yaml.safe_load(open(os.path.join(CASES, "vdu_targets.yaml")))
    data["imports"] = [os.path.normpath(os.path.join(CASES, i)) for i in data["imports"]
                       if "hwaffinity_test_types" not in i] + [str(types)]
    del data["topology_template"]["substitution_mappings"]      # a plain template
    del data["topology_template"]["node_templates"]["VNF"]
    data["topology_template"]["policies"][1] = {"VDU1_initial_delta": {
        "type": "company.policies.HostAffinity",
        "properties": {"initial_delta": {"number_of_instances": 1}}, "targets": ["VDU1"]}}
    path = scratch / "other.yaml"
    path.write_text(yaml.safe_dump(data))
    # Here the name is a VduInitialDelta. heat-translator itself cannot map a
    # type derived from VduInitialDelta (KeyError); what matters is that our
    # placeholder does not take the policy and drop it silently.
    with pytest.raises(InputError, match="heat-translator failed: KeyError: "
                                         "'company.policies.HostAffinity'"):
        translate_file(str(path))
    assert "company.policies.HostAffinity" not in tnt.TOSCA_TO_HOT_TYPE


def test_stock_output_is_unchanged_without_rules(unregistered):
    """A VNFD without rules translates byte for byte as heat-translator alone."""
    stock = translate_file(os.path.join(CASES, "no_rules.yaml"))
    translator.register()
    assert translate_file(os.path.join(CASES, "no_rules.yaml")) == stock


def test_tacker_v1_path_produces_our_output(tmp_path, monkeypatch):
    main, nested = _tacker_v1(K8S_PACKAGE, "podaffinity", tmp_path, monkeypatch)
    expected = os.path.join(EXPECTED, "k8s_podaffinity")
    with open(os.path.join(expected, "main.yaml")) as f:
        assert yaml.safe_load(main) == yaml.safe_load(f)
    assert sorted(nested) == ["master_instance.hot.yaml", "worker_instance.hot.yaml"]
    for name, text in nested.items():
        with open(os.path.join(expected, name)) as f:
            golden = f.read()
        assert text == golden
        # translate() wrote the same nested template into the working directory.
        assert (tmp_path / name).read_text() == golden


def test_values_are_data_not_strings():
    """Hints, group ids and zones are mappings in the HOT data, not strings."""
    files = parsed(translate_file(os.path.join(CASES, "overlapping_groups.yaml")))
    main, nested = files["main.yaml"], files["VDU_B_scale.hot.yaml"]
    res = main["resources"]
    assert res["VDU_A"]["properties"]["scheduler_hints"] == {
        "group": {"get_resource": "hosts_abc"}}
    assert res["VDU_C"]["properties"]["availability_zone"] == {
        "get_param": ["zones_cd_zones", 0]}
    assert res["VDU_B_scale"]["properties"]["resource"]["properties"]["hosts_abc"] == {
        "get_resource": "hosts_abc"}
    server = nested["resources"]["VDU_B"]["properties"]
    assert server["scheduler_hints"] == {"group": {"get_param": "hosts_abc"}}
    assert nested["parameters"]["hosts_abc"] == {"type": "string"}
    assert res["hosts_abc"] == {"type": names.SERVER_GROUP,
                                "properties": {"policies": ["anti-affinity"]}}
    assert res["hosts_de"] == {"type": names.SERVER_GROUP,
                               "properties": {"policies": ["affinity"]}}
    assert main["parameters"]["zones_cd_zones"]["constraints"] == [
        {"length": {"min": 2},
         "description": "policy zones_cd spreads 2 members over distinct zones, "
                        "give at least 2"}]


def test_heat_translator_objects_hold_dicts():
    """Inside heat-translator, before any YAML: our values are dicts and lists."""
    from toscaparser.tosca_template import ToscaTemplate
    from translator.hot.tosca_translator import TOSCATranslator

    tosca = ToscaTemplate(os.path.join(CASES, "soft_and_max_per_host.yaml"), {}, True)
    tr = TOSCATranslator(tosca, {})
    tr.translate_to_yaml_files_dict("main.yaml")
    by_name = {r.name: r for r in tr.hot_template.resources}
    assert by_name["two_per_host"].properties == {
        "policies": ["anti-affinity"], "rules": {"max_server_per_host": 2}}
    assert by_name["soft_spread"].properties == {"policies": ["soft-anti-affinity"]}
    assert by_name["soft_together"].properties == {"policies": ["soft-affinity"]}
    assert by_name["VDU2"].properties["scheduler_hints"] == {
        "group": {"get_resource": "soft_spread"}}
