"""What the SSH tests need, and what happens when it is missing: a failure
when CI is set (CI must not pass by skipping), a skip with the reason elsewhere."""
from ci_policy import unavailable  # noqa: F401  (re-exported for tests/ssh)

try:
    import paramiko  # noqa: F401
    PARAMIKO_MISSING = None
except ImportError as e:
    PARAMIKO_MISSING = ("paramiko is not installed (%s): it is a runtime dependency of "
                        "tacker_hwaffinity.ssh; pip install -e . (or pip install paramiko)" % e)
