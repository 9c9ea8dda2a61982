"""tacker.conf [hwaffinity]: operator-wide defaults, below each VNF's hwaffinity_param."""
import os
import subprocess
import sys

import pytest
from oslo_config import cfg

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.labeling import params
from tacker_hwaffinity.mgmt import conf

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SAMPLE = os.path.join(ROOT, "etc", "tacker-hwaffinity.conf.sample")


def _conf(tmp_path, text):
    path = tmp_path / "tacker.conf"
    path.write_text("[DEFAULT]\n[hwaffinity]\n" + text)
    return conf.load_tacker_conf({"TACKER_CONFIG_FILES": str(path)})


def test_the_committed_sample_is_what_oslo_config_generator_writes(tmp_path):
    out = tmp_path / "sample.conf"
    subprocess.run([sys.executable, "-m", "oslo_config.generator", "--namespace",
                    "tacker_hwaffinity", "--output-file", str(out)], check=True, timeout=60)
    assert out.read_text() == open(SAMPLE).read(), (
        "regenerate: oslo-config-generator --namespace tacker_hwaffinity "
        "--output-file etc/tacker-hwaffinity.conf.sample")


def test_every_option_has_the_parameters_default_and_bounds():
    fresh = cfg.ConfigOpts()
    conf.register(fresh)
    conf.register(fresh)                      # idempotent
    fresh(args=[], default_config_files=[])
    assert conf.defaults(fresh) == {
        "label_keys": ["CIS-node"], "host_source": "auto", "on_colocation": "warn",
        "respread_timeout": 300, "join_timeout": 0,
        "openstack": {"timeout": 30, "retries": 2},
        "ssh": {"connect_timeout": 10, "command_timeout": 120, "retries": 3,
                "insecure_ignore_host_key": False},
        "drain": {"timeout": 300}}
    built_in = params.parse({})["hwaffinity"]
    assert params.parse({}, defaults=conf.defaults(fresh))["hwaffinity"] == built_in


def test_the_vnf_wins_over_tacker_conf_which_wins_over_the_built_in_default(tmp_path):
    c = _conf(tmp_path, "label_keys = rack-host,CIS-node\nssh_retries = 7\n"
                        "openstack_timeout = 12.5\non_colocation = fail\n")
    hw = params.parse({"hwaffinity_param": {"label_keys": ["only-mine"],
                                            "ssh": {"command_timeout": 30}}},
                      defaults=conf.defaults(c))["hwaffinity"]
    assert hw.label_keys == ("only-mine",)                    # the VNF's
    assert hw.ssh["retries"] == 7                             # tacker.conf's
    assert hw.ssh["command_timeout"] == 30                    # the VNF's, beside conf's
    assert hw.openstack == params.OpenStackParams(timeout=12.5, retries=2)  # conf's + built-in
    assert hw.on_colocation == "fail"


@pytest.mark.parametrize("text,message", [
    ("label_keys = not a key!\n", "tacker.conf [hwaffinity] label_keys[0]"),
    ("ssh_retries = 99\n", "ssh_retries"),
    ("host_source = nova\n", "host_source"),
])
def test_a_bad_value_in_tacker_conf_is_named(tmp_path, text, message):
    with pytest.raises((InputError, ValueError, cfg.Error)) as e:
        conf.defaults(_conf(tmp_path, text))
    assert message in str(e.value)


def test_the_v2_script_reads_tacker_conf_from_the_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    if not any(os.path.exists(p) for p in ("/etc/tacker/tacker.conf", "/etc/tacker.conf")):
        assert conf.load_tacker_conf({"TACKER_CONFIG_FILES": ""}) is None   # built-ins only
    with pytest.raises(InputError) as e:
        conf.load_tacker_conf({"TACKER_CONFIG_FILES": str(tmp_path / "missing.conf")})
    assert "no such file" in str(e.value)
    c = _conf(tmp_path, "zone_label_key = topology.kubernetes.io/zone\n")
    assert conf.defaults(c)["zone_label_key"] == "topology.kubernetes.io/zone"


def test_loading_the_v1_driver_registers_the_group_on_tackers_conf():
    from tacker_hwaffinity.mgmt import tacker_v1
    tacker_v1.on_load()
    assert cfg.CONF.hwaffinity.label_keys == ["CIS-node"]
    assert tacker_v1._operator_defaults()["ssh"]["retries"] == 3
