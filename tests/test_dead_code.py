"""No dead code: vulture finds no unused name in the package beyond the reviewed
whitelist (tests/dead_code_whitelist.py, each entry with its reason)."""
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# 60 is vulture's lowest: unused functions, classes, methods, attributes and variables
# (100: unused arguments and unreachable code)
MIN_CONFIDENCE = 60


def test_vulture_finds_no_dead_code():
    done = subprocess.run(
        [sys.executable, "-m", "vulture", "tacker_hwaffinity",
         os.path.join("tests", "dead_code_whitelist.py"),
         "--min-confidence", str(MIN_CONFIDENCE)],
        cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, (
        "dead code (remove it, or whitelist it with a reason in "
        "tests/dead_code_whitelist.py):\n" + done.stdout + done.stderr)
