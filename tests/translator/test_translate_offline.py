"""``translate`` and ``csar validate`` read the package and nothing else: no
network (a listener the test binds must receive no connection), no file outside
the package, and an import cycle is named at once, not a RecursionError."""
import os
import shutil
import socket
import time
import zipfile

import pytest

from tacker_hwaffinity.csar import validate
from tacker_hwaffinity.errors import InputError
from translate_helpers import K8S_PACKAGE, translate_file

DF = "sample_kubernetes_df_podaffinity.yaml"


@pytest.fixture
def listener():
    """(URL, connected()) of a TCP socket on 127.0.0.1 that nothing should reach."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    # Were a fetch to reach it, it would wait for an answer that never comes: bounded.
    saved = socket.getdefaulttimeout()
    socket.setdefaulttimeout(5)

    def connected():
        try:
            conn, _ = sock.accept()     # the kernel completes handshakes without accept()
        except BlockingIOError:
            return False
        conn.close()
        return True

    yield "http://127.0.0.1:%d" % sock.getsockname()[1], connected
    socket.setdefaulttimeout(saved)
    sock.close()


def _package(tmp_path, df_imports, extra=None):
    """A copy of the k8s package whose podaffinity flavour imports DF_IMPORTS too
    (YAML lines), with EXTRA {package path: text} added."""
    pkg = tmp_path / "pkg"
    shutil.copytree(K8S_PACKAGE, pkg)
    df = pkg / "Definitions" / DF
    df.write_text(df.read_text().replace(
        "  - sample_kubernetes_types.yaml\n",
        "  - sample_kubernetes_types.yaml\n" + "".join("  - %s\n" % i for i in df_imports), 1))
    for name, text in (extra or {}).items():
        (pkg / name).write_text(text)
    return pkg


def _zip(folder, target):
    with zipfile.ZipFile(target, "w") as z:
        for here, _, files in os.walk(folder):
            for name in files:
                path = os.path.join(here, name)
                z.write(path, os.path.relpath(path, folder))
    return str(target)


def _translate(path):
    return translate_file(str(path), "podaffinity")


TYPES = "tosca_definitions_version: tosca_simple_yaml_1_2\n"


def _repository_package(tmp_path, url):
    pkg = _package(tmp_path, ["remote: {file: extra_types.yaml, repository: vendor}"],
                   {"Definitions/extra_types.yaml": TYPES})
    df = pkg / "Definitions" / DF
    df.write_text(df.read_text().replace(
        "\nimports:\n", "\nrepositories:\n  vendor:\n    url: %s/types\n\nimports:\n" % url, 1))
    return pkg


@pytest.mark.parametrize("as_zip", [False, True], ids=["directory", "csar"])
def test_translate_never_fetches_from_a_repository(tmp_path, listener, as_zip):
    url, connected = listener
    pkg = _repository_package(tmp_path, url)
    path = _zip(pkg, tmp_path / "pkg.zip") if as_zip else pkg
    with pytest.raises(InputError) as refused:
        _translate(path)
    assert not connected()
    assert refused.value.field == "imports"
    assert DF in refused.value.source and "repository 'vendor'" in refused.value.message


@pytest.mark.parametrize("imports", [
    ["remote: {file: extra_types.yaml, repository: vendor}"],
    ["LISTENER/missing_types.yaml"],
], ids=["repository", "http-import"])
def test_csar_validate_never_fetches(tmp_path, listener, imports):
    url, connected = listener
    pkg = _repository_package(tmp_path, url)
    df = pkg / "Definitions" / DF
    df.write_text(df.read_text().replace(
        "  - remote: {file: extra_types.yaml, repository: vendor}\n",
        "".join("  - %s\n" % i.replace("LISTENER", url) for i in imports)))
    report = validate.validate(_zip(pkg, tmp_path / "pkg.zip"))
    assert not connected()
    found = [p for p in report.problems if p.field == "imports"]
    assert found and found[0].source == "Definitions/" + DF, report.problems


@pytest.fixture
def secret(tmp_path):
    """A YAML file beside (outside) the package that must not be read."""
    path = tmp_path / "secret.yaml"
    path.write_text(TYPES + "node_types: {}\n")
    os.chmod(path, 0o644)
    return path


@pytest.mark.parametrize("how", ["absolute", "dotdot"])
def test_an_import_outside_the_package_is_not_read(tmp_path, secret, how, monkeypatch):
    uri = str(secret) if how == "absolute" else "../../secret.yaml"
    pkg = _package(tmp_path, [uri])
    opened = []
    real_open = open

    def spy(file, *args, **kwargs):
        opened.append(os.path.realpath(file) if isinstance(file, str) else file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr("builtins.open", spy)
    with pytest.raises(InputError, match="outside the package") as refused:
        _translate(pkg)
    monkeypatch.undo()
    assert str(os.path.realpath(secret)) not in opened
    assert refused.value.field == "imports" and DF in refused.value.source
    report = validate.validate(_zip(pkg, tmp_path / "pkg.zip"))
    assert any("outside the package" in p.message for p in report.problems)


CYCLE = {"Definitions/a.yaml": TYPES + "imports:\n  - b.yaml\n",
         "Definitions/b.yaml": TYPES + "imports:\n  - a.yaml\n"}


def test_an_import_cycle_is_named_fast(tmp_path):
    pkg = _package(tmp_path, ["a.yaml"], CYCLE)
    start = time.monotonic()
    with pytest.raises(InputError) as refused:
        _translate(pkg)
    assert time.monotonic() - start < 2
    assert ("import cycle: Definitions/a.yaml -> Definitions/b.yaml -> Definitions/a.yaml"
            in refused.value.message)
    start = time.monotonic()
    report = validate.validate(_zip(pkg, tmp_path / "pkg.zip"))
    assert time.monotonic() - start < 2
    assert any("import cycle" in p.message for p in report.problems), report.problems
