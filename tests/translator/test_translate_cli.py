"""``hwaffinity translate`` and the offline package loader behind it."""
import os
import pathlib
import shutil
import zipfile

import pytest

from tacker_hwaffinity.cli.main import main
from translate_helpers import (CASES, EXPECTED, K8S_PACKAGE, absolute_imports, load_yaml,
                               scratch_dir, translate_file, write_vnfd)

TOP = os.path.join(K8S_PACKAGE, "Definitions", "sample_kubernetes_top.vnfd.yaml")


def _golden(case):
    folder = os.path.join(EXPECTED, case)
    return {name: open(os.path.join(folder, name)).read() for name in os.listdir(folder)}


def _zip(folder, target, extra=None):
    with zipfile.ZipFile(target, "w") as z:
        for root, _, files in os.walk(folder):
            for f in files:
                full = os.path.join(root, f)
                z.write(full, os.path.relpath(full, folder))
        for name, text in (extra or {}).items():
            z.writestr(name, text)
    return str(target)


def _run(capsys, *argv):
    status = main(["translate"] + list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def test_csar_zip_writes_main_and_nested(tmp_path, capsys):
    csar = _zip(K8S_PACKAGE, tmp_path / "k8s.csar")
    out_dir = tmp_path / "hot"
    status, out, err = _run(capsys, csar, "--flavour", "podaffinity", "--output-dir", str(out_dir))
    assert status == 0, err
    assert err == ""
    assert out.splitlines() == ["wrote %s" % (out_dir / n) for n in
                                ("main.yaml", "master_instance.hot.yaml",
                                 "worker_instance.hot.yaml")]
    assert {p.name: p.read_text() for p in out_dir.iterdir()} == _golden("k8s_podaffinity")


@pytest.mark.parametrize("source", [K8S_PACKAGE, TOP], ids=["directory", "top_vnfd"])
def test_package_directory_and_top_vnfd(source):
    assert translate_file(source, "podaffinity_shared") == _golden("k8s_podaffinity_shared")


def test_flavour_file_needs_no_flavour_option():
    df = os.path.join(K8S_PACKAGE, "Definitions", "sample_kubernetes_df_podaffinity.yaml")
    assert translate_file(df) == _golden("k8s_podaffinity")


def test_default_output_directory_is_cwd(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    status, out, _ = _run(capsys, os.path.join(CASES, "vdu_targets.yaml"))
    assert status == 0
    assert out == "wrote ./main.yaml\n"
    assert (tmp_path / "main.yaml").read_text() == _golden("vdu_targets")["main.yaml"]


def test_zone_parameters_without_default_are_noted(tmp_path, capsys):
    status, _, err = _run(capsys, os.path.join(CASES, "zone_scope.yaml"), "--output-dir",
                          str(tmp_path))
    assert status == 0
    assert err == ("note: parameter zone_spread_zones has no default: give at least 3 "
                   "distinct availability zones (members VDU1, VDU2, VDU3, in this order)\n")


def _error(capsys, *argv):
    status, out, err = _run(capsys, *argv)
    assert status == 2 and out == ""
    assert err.count("\n") == 1 and "Traceback" not in err, err
    return err


def test_several_flavours_need_a_choice(capsys):
    err = _error(capsys, K8S_PACKAGE)
    assert "field --flavour: several deployment flavours (podaffinity, " \
           "podaffinity_shared); choose one with --flavour" in err


def test_unknown_flavour(capsys):
    err = _error(capsys, K8S_PACKAGE, "--flavour", "simple")
    assert "no deployment flavour 'simple'; the package has podaffinity, " \
           "podaffinity_shared" in err


def test_flavour_file_with_another_flavour(capsys):
    df = os.path.join(K8S_PACKAGE, "Definitions", "sample_kubernetes_df_podaffinity.yaml")
    err = _error(capsys, df, "--flavour", "podaffinity_shared")
    assert "%s: field --flavour: this file is deployment flavour 'podaffinity'" % df in err


def _copy_package(tmp_path):
    target = tmp_path / "pkg"
    shutil.copytree(K8S_PACKAGE, target)
    return target


ETSI_COMMON_URL = ("https://forge.etsi.org/rep/nfv/SOL001/raw/v2.6.1/"
                   "etsi_nfv_sol001_common_types.yaml")


def _package_importing_common_types_by_url(tmp_path):
    """A package copy in which only a URL import brings in the common types.

    ETSI's published etsi_nfv_sol001_vnfd_types.yaml (and Tacker's sample
    packages) import the common types by their forge.etsi.org URL; the copy
    in the tacker wheel, which the tests use, has no imports. The copy gets
    ETSI's import back, and the package's own relative imports of the common
    types go, so that the URL import is the only way to them.
    """
    pkg = _copy_package(tmp_path)
    defs = pkg / "Definitions"
    vnfd_types = defs / "etsi_nfv_sol001_vnfd_types.yaml"
    text = vnfd_types.read_text()
    if ETSI_COMMON_URL not in text:
        vnfd_types.write_text(text.replace(
            "\ndata_types:\n", "\nimports:\n  - %s\n\ndata_types:\n" % ETSI_COMMON_URL, 1))
    assert load_yaml(str(vnfd_types))["imports"] == [ETSI_COMMON_URL]
    for own in defs.glob("sample_kubernetes_*.yaml"):
        own.write_text(own.read_text().replace("  - etsi_nfv_sol001_common_types.yaml\n", ""))
    return pkg


def test_url_import_resolves_to_local_copy(tmp_path):
    pkg = _package_importing_common_types_by_url(tmp_path)
    assert translate_file(str(pkg), "podaffinity") == _golden("k8s_podaffinity")


def test_url_import_without_local_copy(tmp_path, capsys):
    pkg = _package_importing_common_types_by_url(tmp_path)
    os.remove(pkg / "Definitions" / "etsi_nfv_sol001_common_types.yaml")
    err = _error(capsys, str(pkg), "--flavour", "podaffinity")
    assert "etsi_nfv_sol001_vnfd_types.yaml: field imports: import %s cannot be " \
           "resolved offline" % ETSI_COMMON_URL in err


def test_missing_import(tmp_path, capsys):
    pkg = _copy_package(tmp_path)
    os.remove(pkg / "Definitions" / "sample_kubernetes_types.yaml")
    err = _error(capsys, str(pkg), "--flavour", "podaffinity")
    assert "sample_kubernetes_df_podaffinity.yaml: field imports: import " \
           "sample_kubernetes_types.yaml not found" in err


def test_invalid_yaml(tmp_path, capsys):
    bad = tmp_path / "bad.yaml"
    bad.write_text("topology_template: [unclosed\n")
    err = _error(capsys, str(bad))
    assert "%s: not valid YAML at line 2" % bad in err


def test_not_a_template(tmp_path, capsys):
    bad = tmp_path / "list.yaml"
    bad.write_text("- just\n- a list\n")
    err = _error(capsys, str(bad))
    assert "%s: not a TOSCA service template" % bad in err


def test_missing_path(tmp_path, capsys):
    err = _error(capsys, str(tmp_path / "nope.zip"))
    assert "nope.zip: no such file or directory" in err


def test_archive_escaping_the_package(tmp_path, capsys):
    csar = _zip(K8S_PACKAGE, tmp_path / "evil.zip", {"../outside.yaml": "a: 1\n"})
    err = _error(capsys, csar, "--flavour", "podaffinity")
    assert "archive member '../outside.yaml' escapes the package" in err


def test_output_directory_that_is_a_file(tmp_path, capsys):
    blocker = tmp_path / "out"
    blocker.write_text("")
    err = _error(capsys, os.path.join(CASES, "vdu_targets.yaml"), "--output-dir", str(blocker))
    assert "field --output-dir: cannot create directory" in err


def test_tosca_parser_errors_are_one_line(capsys):
    bad = pathlib.Path(scratch_dir()) / "vnfd.yaml"
    text = open(os.path.join(CASES, "vdu_targets.yaml")).read()
    text = text.replace("../Definitions/", os.path.join(os.path.dirname(CASES),
                                                        "Definitions") + "/")
    bad.write_text(text.replace("num_virtual_cpu: 1", "num_virtual_cpu: 0"))
    err = _error(capsys, str(bad))
    assert "tosca-parser rejected the VNFD" in err and "num_virtual_cpu" in err


def test_policies_as_a_map(tmp_path, capsys):
    """The Tacker spec's example writes policies as a map; TOSCA wants a list."""
    data = load_yaml(os.path.join(CASES, "vdu_targets.yaml"))
    data = absolute_imports(data, CASES)
    data["topology_template"]["policies"] = {
        k: v for p in data["topology_template"]["policies"] for k, v in p.items()}
    path = write_vnfd(data)
    err = _error(capsys, path)
    assert "%s: field topology_template.policies: policies must be a list" % path in err


def test_help_lists_translate(capsys):
    with pytest.raises(SystemExit) as info:
        main(["translate", "--help"])
    assert info.value.code == 0
    assert "VNFD_OR_CSAR" in capsys.readouterr().out


def test_the_shipped_package_source_translates_as_the_readme_shows(tmp_path, capsys):
    """csar/k8s-cluster has no ETSI type files (csar build adds them): translate reads a
    copy with them added from the installed tacker, and leaves the source as it was."""
    root = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))), "csar", "k8s-cluster")
    before = sorted(os.listdir(os.path.join(root, "Definitions")))
    assert "etsi_nfv_sol001_common_types.yaml" not in before
    status, out, err = _run(capsys, root, "--flavour", "podaffinity", "--output-dir", str(tmp_path))
    assert status == 0, err
    assert "wrote %s" % (tmp_path / "main.yaml") in out
    main_yaml = load_yaml(str(tmp_path / "main.yaml"))
    assert any(r["type"] == "OS::Nova::ServerGroup" for r in main_yaml["resources"].values())
    assert sorted(os.listdir(os.path.join(root, "Definitions"))) == before
