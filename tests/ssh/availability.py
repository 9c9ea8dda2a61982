"""What the SSH tests need, and what happens when it is missing: a failure
when CI=true (CI must not pass by skipping), a skip with the reason elsewhere."""
import os

import pytest

try:
    import paramiko  # noqa: F401
    PARAMIKO_MISSING = None
except ImportError as e:  # the lead adds paramiko to setup.cfg install_requires
    PARAMIKO_MISSING = ("paramiko is not installed (%s): it is a runtime dependency of "
                        "tacker_hwaffinity.ssh; pip install -e . (or pip install paramiko)" % e)


def in_ci():
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable(reason):
    """Fail in CI, skip elsewhere."""
    if in_ci():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)
