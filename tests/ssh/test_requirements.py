"""Without paramiko the other modules here are not collected (conftest.py);
this test then says why, failing in CI and skipping elsewhere."""
from .availability import PARAMIKO_MISSING, unavailable


def test_paramiko_is_installed():
    if PARAMIKO_MISSING:
        unavailable(PARAMIKO_MISSING)
