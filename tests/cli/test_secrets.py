"""The CLI never prints a secret of the files it is given: a ``relabel --params`` file
PyYAML refuses is named with the place of its error, not with the text PyYAML quotes
(the line, and an alias it cannot find, which a password starting with '*' is to it)."""
import pytest

from tacker_hwaffinity.cli.main import main

pytest.importorskip("keystoneauth1")


@pytest.mark.parametrize("text,place", [
    ("hwaffinity_param:\n  ssh:\n    password: *S3cr3tPw\n", "line 3, column 15"),
    ('hwaffinity_param:\n  ssh:\n    private_key: "-----BEGIN KEY S3cr3tKey\n  host: [\n',
     "line 5, column 1"),
])
def test_a_params_file_pyyaml_refuses_is_named_without_its_text(tmp_path, capsys, text, place):
    path = tmp_path / "params.yaml"
    path.write_text(text)
    rc = main(["relabel", "--stack", "s", "--params", str(path)])
    err = capsys.readouterr().err
    assert "S3cr3t" not in err
    assert rc == 2 and "%s: not valid YAML" % path in err and place in err
