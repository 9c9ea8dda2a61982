"""Keystone credentials from clouds.yaml: a file PyYAML refuses is named with the line of
its error, never with its text, nor with PyYAML's error in its traceback (PyYAML names an
alias it cannot find, which a password starting with '*' is to it)."""
import logging

import pytest

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.openstack import auth

CLOUDS = """clouds:
  vim:
    auth:
      auth_url: http://keystone:5000/v3
      username: admin
      password: %s
      project_name: admin
"""


@pytest.mark.parametrize("password", ["*Sw0rdf1sh", "Sw0rd: f1sh: x"])
def test_a_clouds_yaml_pyyaml_refuses_is_named_without_its_text(tmp_path, caplog, password):
    path = tmp_path / "clouds.yaml"
    path.write_text(CLOUDS % password)
    with pytest.raises(InputError) as e:
        auth.access_from_environment("vim", env={"OS_CLIENT_CONFIG_FILE": str(path)})
    with caplog.at_level(logging.DEBUG):
        logging.getLogger("test.openstack.auth").error("%s", e.value, exc_info=e.value)
    assert "Sw0rd" not in caplog.text and "f1sh" not in caplog.text
    assert "line 6" in caplog.text and str(path) in caplog.text
