"""Each CLI's dead pod watch turns its probes to 503 (the cases in health_wiring_cases.py).

The cases run the CLIs in-process, so each runs in a child pytest: by the time the whole
suite reaches them, the pytest process may have had threading and sockets patched by
eventlet (the Tacker tests import it), which no component ever has."""
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


@pytest.mark.parametrize("case", ["test_the_agent_reports_its_dead_pod_watch",
                                  "test_the_controller_reports_its_dead_pod_watch",
                                  "test_the_webhook_reports_its_dead_pod_watch"])
def test_dead_watch_wiring(case, tmp_path):
    p = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--rootdir", ROOT,
         "--basetemp", str(tmp_path / "t"), os.path.join(HERE, "health_wiring_cases.py")
         + "::" + case], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert p.returncode == 0 and "1 passed" in p.stdout, p.stdout[-3000:] + p.stderr[-2000:]
