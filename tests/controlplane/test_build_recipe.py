"""The control-plane binaries' cache key follows the build recipe."""
import os
import shutil
import subprocess

from . import harness


def print_bin_dir(script, cache):
    env = dict(os.environ, HWAFFINITY_CACHE=str(cache))
    return subprocess.run(["bash", str(script), "--print-bin-dir"], env=env, check=True,
                          capture_output=True, text=True, timeout=30).stdout.strip()


def test_the_harness_looks_where_the_build_script_puts_the_binaries(tmp_path, monkeypatch):
    monkeypatch.setenv("HWAFFINITY_CACHE", str(tmp_path))
    monkeypatch.delenv("HWAFFINITY_KUBE_BIN", raising=False)
    expected = os.path.join(str(tmp_path), "kubernetes-%s-%s" % (
        harness.KUBE_VERSION, harness.recipe_key()), "bin")
    assert harness.kube_bin_dir() == expected
    assert print_bin_dir(harness.BUILD_SCRIPT, tmp_path) == expected
    assert not os.path.exists(expected), "--print-bin-dir must not build or create anything"


def test_any_change_to_the_recipe_changes_the_cache_directory(tmp_path):
    changed = tmp_path / "tools" / "build-kube.sh"
    changed.parent.mkdir()
    shutil.copyfile(harness.BUILD_SCRIPT, changed)
    # what it sources: apt's commands that wait for a held dpkg lock
    shutil.copyfile(os.path.join(os.path.dirname(harness.BUILD_SCRIPT), "apt-lock.sh"),
                    changed.parent / "apt-lock.sh")
    before = print_bin_dir(changed, tmp_path / "cache")
    with open(changed, "a") as f:
        f.write("# a changed recipe\n")
    after = print_bin_dir(changed, tmp_path / "cache")
    assert before != after
    assert os.path.basename(os.path.dirname(before)).startswith(
        "kubernetes-%s-" % harness.KUBE_VERSION)
