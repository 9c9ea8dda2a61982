"""The types hold in every run: mypy (pinned in the test extras) with pyproject.toml's
[tool.mypy], strict on the pure core and the serving adapters (scheduling/, objects/,
webhook/, kube/), mypy's default level on the rest (doc/testing.md, "Types")."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_mypy_finds_nothing():
    """For the Python that runs the tests, with the libraries installed for it: numpy's
    stubs describe only the Pythons that numpy release supports (numpy 2.5, trixie's
    run, reports false errors when asked about 3.10)."""
    version = "%d.%d" % sys.version_info[:2]
    done = subprocess.run([sys.executable, "-m", "mypy", "--python-version", version],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-20000:] + done.stderr
