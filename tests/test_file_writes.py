"""Every file the package writes is written safely (#52 item 5; doc/security.md): a link
planted at its name (or at the temporary name it once used) is replaced, not written
through; a file planted there (a hard link to another file, a file someone holds open)
keeps its content; keys are 0600 in a directory no one else may write, outputs follow the
umask; a refusal is one line naming the file, not a traceback.

Each test plants what another user could (links, files, loose directories) in tmp_path,
then runs the real writer: ``webhook certs``, ``translate``, ``csar build``, zip
extraction, the agent's checkpoint journal, the MgmtDriver's kubeconfig."""
import contextlib
import os
import stat
import tempfile
import zipfile

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tacker_hwaffinity.cli.main import main
from tacker_hwaffinity.errors import InputError

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CNF = os.path.join(ROOT, "csar", "cnf")
K8S_PACKAGE = os.path.join(ROOT, "tests", "translator", "data", "k8s_cluster_package")
VICTIM = "another user's file\n"
NOBODY = 65534
as_root = pytest.mark.skipif(os.geteuid() != 0, reason="planting another user's file "
                                                     "needs root (chown)")


@contextlib.contextmanager
def umask(mask):
    old = os.umask(mask)
    try:
        yield
    finally:
        os.umask(old)


def _victim(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text(VICTIM)
    return victim


def _mode(path):
    return stat.S_IMODE(os.lstat(path).st_mode)


def _run(capsys, *argv):
    status = main(list(argv))
    out, err = capsys.readouterr()
    return status, out, err


def _certs(capsys, out):
    return _run(capsys, "webhook", "certs", "--out", str(out), "--ip", "127.0.0.1")


# -- webhook certs: keys -------------------------------------------------------------------

def test_certs_replace_a_planted_link_and_leave_where_it_points(tmp_path, capsys):
    victim, out = _victim(tmp_path), tmp_path / "certs"
    out.mkdir(mode=0o700)
    (out / "tls.key").symlink_to(victim)
    (out / "ca.crt").symlink_to(victim)
    status, _, err = _certs(capsys, out)
    assert status == 0, err
    assert victim.read_text() == VICTIM and _mode(victim) == 0o644
    assert not (out / "tls.key").is_symlink() and not (out / "ca.crt").is_symlink()
    assert _mode(out / "tls.key") == 0o600
    assert (out / "tls.key").read_bytes().startswith(b"-----BEGIN")


def test_certs_never_write_into_a_planted_file(tmp_path, capsys):
    """A hard link to another file and a file its planter holds open: the key goes to a
    new file, so neither the other file nor the open descriptor sees it."""
    victim, out = _victim(tmp_path), tmp_path / "certs"
    out.mkdir(mode=0o700)
    os.link(victim, out / "client.key")
    (out / "tls.key").write_text("planted\n")
    with open(out / "tls.key") as held:
        status, _, err = _certs(capsys, out)
        assert status == 0, err
        assert held.read() == "planted\n"
    assert victim.read_text() == VICTIM
    assert os.stat(out / "client.key").st_nlink == 1 and _mode(out / "client.key") == 0o600


def test_certs_make_a_missing_directory_0700_and_honour_the_umask(tmp_path, capsys):
    out = tmp_path / "new" / "certs"
    with umask(0o022):
        status, _, err = _certs(capsys, out)
    assert status == 0, err
    assert (_mode(out.parent), _mode(out)) == (0o755, 0o700)
    assert {n: _mode(out / n) for n in sorted(os.listdir(out))} == {
        "ca.crt": 0o644, "client.crt": 0o644, "client.key": 0o600, "tls.crt": 0o644,
        "tls.key": 0o600}
    with umask(0o077):
        assert _certs(capsys, out)[0] == 0
    assert (_mode(out / "ca.crt"), _mode(out / "tls.crt"), _mode(out / "tls.key")) == (
        0o600, 0o600, 0o600)


def test_certs_refuse_a_directory_others_may_write(tmp_path, capsys):
    out = tmp_path / "shared"
    out.mkdir()
    out.chmod(0o777)
    status, stdout, err = _certs(capsys, out)
    assert (status, stdout, os.listdir(out)) == (2, "", [])
    assert err == ("hwaffinity webhook certs: error: %s: field --out: cannot write: may be written "
                   "by others (mode 0777), who could replace the keys written there: chmod "
                   "go-w it, or give a new directory (made 0700)\n" % out)


@as_root
def test_certs_refuse_a_directory_of_another_user(tmp_path, capsys):
    out = tmp_path / "theirs"
    out.mkdir(mode=0o700)
    os.chown(out, NOBODY, NOBODY)
    status, _, err = _certs(capsys, out)
    assert (status, os.listdir(out)) == (2, [])
    assert "field --out: cannot write: is owned by user %d, not this one" % NOBODY in err
    assert len(err.splitlines()) == 1


@as_root
def test_certs_refuse_a_link_of_another_user_as_the_directory(tmp_path, capsys):
    mine, out = tmp_path / "mine", tmp_path / "certs"
    mine.mkdir(mode=0o700)
    out.symlink_to(mine)
    os.lchown(out, NOBODY, NOBODY)
    status, _, err = _certs(capsys, out)
    assert (status, os.listdir(mine)) == (2, [])
    assert ("%s: field --out: cannot write: is a symbolic link of user %d, who chooses where "
            "it leads" % (out, NOBODY)) in err


# -- translate: CLI outputs -----------------------------------------------------------------

def test_translate_replaces_a_planted_link_at_an_output_name(tmp_path, capsys):
    pytest.importorskip("translator")
    victim, out = _victim(tmp_path), tmp_path / "hot"
    out.mkdir()
    (out / "main.yaml").symlink_to(victim)
    status, _, err = _run(capsys, "translate", K8S_PACKAGE, "--flavour", "podaffinity",
                          "--output-dir", str(out))
    assert status == 0, err
    assert victim.read_text() == VICTIM
    assert not (out / "main.yaml").is_symlink()
    assert "heat_template_version" in (out / "main.yaml").read_text()


def test_translate_refuses_a_template_name_that_leaves_the_directory(tmp_path):
    """heat-translator names a nested template after its policy (NAME_res.yaml): a
    policy named ../x would write outside --output-dir."""
    from tacker_hwaffinity.cli import translate
    out = tmp_path / "hot"
    with pytest.raises(InputError) as e:
        translate._write(str(out), {"main.yaml": "a: 1\n", "../escape_res.yaml": "b: 2\n"})
    assert str(e.value) == ("%s/../escape_res.yaml: cannot write: '../escape_res.yaml' is not "
                            "a plain file name (no folder, no '..')" % out)
    assert not (tmp_path / "escape_res.yaml").exists()


# -- csar build: the package file ------------------------------------------------------------

def test_csar_build_follows_the_umask_and_replaces_a_planted_link(tmp_path, capsys):
    victim, target = _victim(tmp_path), tmp_path / "vnf-b.zip"
    target.symlink_to(victim)
    with umask(0o027):
        status, _, err = _run(capsys, "csar", "build", CNF, "--output-file", str(target))
    assert status == 0, err
    assert victim.read_text() == VICTIM
    assert not target.is_symlink() and zipfile.is_zipfile(target)
    assert _mode(target) == 0o640
    assert sorted(os.listdir(tmp_path)) == ["victim", "vnf-b.zip"]      # no temporary left


# -- zip extraction ----------------------------------------------------------------------------

def _package(tmp_path, members):
    path = tmp_path / "pkg.zip"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            z.writestr(name, data)
    return path


def test_extraction_replaces_a_link_planted_at_a_member(tmp_path):
    from tacker_hwaffinity.vnfpackage import zipio
    victim, into = _victim(tmp_path), tmp_path / "into"
    (into / "Definitions").mkdir(parents=True)
    (into / "Definitions" / "vnfd.yaml").symlink_to(victim)
    with zipio.open_zip(str(_package(tmp_path, {"Definitions/vnfd.yaml": "a: 1\n"}))) as z:
        assert zipio.extract_safe(z, str(into)) == ["Definitions/vnfd.yaml"]
    assert victim.read_text() == VICTIM
    assert (into / "Definitions" / "vnfd.yaml").read_text() == "a: 1\n"


def test_extraction_refuses_a_link_planted_as_a_folder(tmp_path):
    from tacker_hwaffinity.vnfpackage import zipio
    elsewhere, into = tmp_path / "elsewhere", tmp_path / "into"
    elsewhere.mkdir()
    into.mkdir()
    (into / "Files").symlink_to(elsewhere)
    package = _package(tmp_path, {"Files/kubernetes/cnf.yaml": "kind: Pod\n"})
    with zipio.open_zip(str(package)) as z, pytest.raises(InputError) as e:
        zipio.extract_safe(z, str(into))
    assert str(e.value) == ("%s: Files/kubernetes/cnf.yaml: cannot be extracted: Files on its "
                            "way is a link or a file, not a folder" % package)
    assert os.listdir(elsewhere) == []


_FOLDERS = st.lists(st.sampled_from(["a", "b"]), max_size=2)


@pytest.mark.filterwarnings("ignore:Duplicate name:UserWarning")      # wanted: last wins
@given(members=st.lists(st.tuples(_FOLDERS, st.sampled_from(["x", "y"])), min_size=1,
                        max_size=5),
       planted=st.tuples(_FOLDERS, st.sampled_from(["a", "b", "x", "y"])))
def test_extraction_writes_nothing_outside_its_folder_whatever_link_is_planted(
        members, planted):
    """Members a/x, b/a/y...; a link to a folder or a file outside planted at any name
    inside: extraction either writes every member (the last of a name wins) as a regular
    file inside, or refuses with an InputError; outside, nothing changes."""
    from tacker_hwaffinity.vnfpackage import zipio
    names = ["/".join(folders + [leaf]) for folders, leaf in members]
    with tempfile.TemporaryDirectory() as tmp:
        outside, into = os.path.join(tmp, "outside"), os.path.join(tmp, "into")
        os.makedirs(os.path.join(outside, "x"))
        os.makedirs(os.path.join(into, *planted[0]))
        os.symlink(outside if planted[1] in "ab" else os.path.join(outside, "x"),
                   os.path.join(into, *planted[0], planted[1]))
        package = os.path.join(tmp, "pkg.zip")
        with zipfile.ZipFile(package, "w") as z:
            for n, name in enumerate(names):
                z.writestr(name, "member %d\n" % n)
        with zipio.open_zip(package) as z:
            try:
                extracted = zipio.extract_safe(z, into)
            except InputError:
                extracted = None
        assert [(r, sorted(d), f) for r, d, f in os.walk(outside)] == [
            (outside, ["x"], []), (os.path.join(outside, "x"), [], [])]
        if extracted is not None:
            for n, name in enumerate(names):
                if name not in names[n + 1:]:
                    path = os.path.join(into, *name.split("/"))
                    assert stat.S_ISREG(os.lstat(path).st_mode)
                    with open(path) as f:
                        assert f.read() == "member %d\n" % n


# -- the agent's checkpoint journal -------------------------------------------------------------

def test_checkpoint_rewrite_ignores_a_link_at_its_old_temporary_name(tmp_path):
    """The journal was compacted through the predictable ``nri-grants.json.tmp``."""
    from tacker_hwaffinity.agent.checkpoint import CHECKPOINT, Checkpoint
    victim, path = _victim(tmp_path), tmp_path / CHECKPOINT
    (tmp_path / (CHECKPOINT + ".tmp")).symlink_to(victim)
    Checkpoint(str(path)).rewrite({"uid-1": {"app": {"cpus": "2-3"}}})
    assert victim.read_text() == VICTIM
    assert Checkpoint(str(path)).load(None) == {"uid-1": {"app": {"cpus": "2-3"}}}


@pytest.mark.parametrize("plant", ["symlink", "hard link"])
def test_checkpoint_journal_is_never_appended_through_a_planted_name(tmp_path, plant):
    from tacker_hwaffinity.agent.checkpoint import CHECKPOINT, Checkpoint
    victim, path = _victim(tmp_path), tmp_path / CHECKPOINT
    if plant == "symlink":
        path.symlink_to(victim)
    else:
        os.link(victim, path)
    journal = Checkpoint(str(path))
    with pytest.raises(OSError) as e:      # the agent warns and counts it
        journal.record("uid-1", {"app": {"cpus": "2"}})
    why = ("is a symbolic link: not followed" if plant == "symlink" else
           "has 2 names (hard links): not written into")
    assert (e.value.filename, e.value.strerror) == (str(path), why)
    assert victim.read_text() == VICTIM
    journal.rewrite({"uid-1": {"app": {"cpus": "2"}}})     # the next compaction replaces it
    journal.record("uid-2", {"app": {"cpus": "3"}})
    journal.close()
    assert victim.read_text() == VICTIM
    assert set(Checkpoint(str(path)).load(None)) == {"uid-1", "uid-2"}


# -- the MgmtDriver's kubeconfig (already safe: a guard) ------------------------------------------

def test_kubeconfig_is_a_fresh_private_file_removed_on_close(tmp_path, monkeypatch):
    from tacker_hwaffinity.mgmt.kubectl_runner import LocalKubectl
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", None)
    kubectl = LocalKubectl("apiVersion: v1\nkind: Config\n")
    try:
        assert os.path.dirname(kubectl.path) == str(tmp_path)
        assert stat.S_ISREG(os.lstat(kubectl.path).st_mode) and _mode(kubectl.path) == 0o600
    finally:
        kubectl.close()
    assert not os.path.exists(kubectl.path)


# -- the module itself ---------------------------------------------------------------------------

def test_a_temporary_name_taken_by_a_planted_link_is_skipped(tmp_path, monkeypatch):
    """The temporary name is random; were it guessed, O_EXCL | O_NOFOLLOW refuses the
    planted link and the next name is tried."""
    from tacker_hwaffinity import safewrite
    victim = _victim(tmp_path)
    names = iter(["guessed", "fresh"])
    monkeypatch.setattr(safewrite.secrets, "token_hex", lambda n: next(names))
    (tmp_path / ".out.guessed.tmp").symlink_to(victim)
    safewrite.replace_file(str(tmp_path / "out"), b"data")
    assert victim.read_text() == VICTIM and (tmp_path / "out").read_bytes() == b"data"
    assert os.path.islink(tmp_path / ".out.guessed.tmp")
    assert not os.path.exists(tmp_path / ".out.fresh.tmp")


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path):
    from tacker_hwaffinity import safewrite
    (tmp_path / "out").write_bytes(b"old")
    with pytest.raises(RuntimeError), safewrite.replacing(str(tmp_path / "out")) as f:
        f.write(b"half")
        raise RuntimeError("the writer failed")
    assert os.listdir(tmp_path) == ["out"] and (tmp_path / "out").read_bytes() == b"old"


def test_a_planted_fifo_is_refused_without_waiting_for_a_reader(tmp_path):
    from tacker_hwaffinity import safewrite
    os.mkfifo(tmp_path / "journal")
    with pytest.raises(safewrite.Unsafe) as e:
        safewrite.open_append(str(tmp_path / "journal"))
    assert e.value.strerror == "is a FIFO or a socket, not a regular file: not written into"
