"""The lint rules of ruff.toml hold in every run, not only under ``tox -e lint``:
pycodestyle, pyflakes, broad excepts only with their reason, no function past the
complexity limit, no noqa that suppresses nothing."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_ruff_finds_nothing():
    done = subprocess.run(
        [sys.executable, "-m", "ruff", "check", "--no-cache", "tacker_hwaffinity", "tests",
         "benchmarks", "deploy"],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
