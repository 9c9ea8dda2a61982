"""Translator tests run with the extension registered, as Tacker does."""
import pytest


def pytest_configure(config):
    # Declared by tests/openstack/conftest.py too; repeated so that running
    # tests/translator alone knows the marker of test_translate_heat.py.
    config.addinivalue_line("markers", "openstack: needs the real Nova/Heat venv "
                                       "(tools/openstack-venv.sh)")


@pytest.fixture(scope="session", autouse=True)
def _registered():
    """The extension is registered for every translator test (as in Tacker)."""
    from tacker_hwaffinity import translator
    from tacker_hwaffinity.translator import run
    run.quiet_libraries()
    translator.register()
    yield
