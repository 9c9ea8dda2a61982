"""Translator tests run with the extension registered, as Tacker does."""
import pytest


@pytest.fixture(scope="session", autouse=True)
def _registered():
    """The extension is registered for every translator test (as in Tacker)."""
    from tacker_hwaffinity import translator
    from tacker_hwaffinity.translator import run
    run.quiet_libraries()
    translator.register()
    yield
