"""The shared VM boots again once when the guest kernel panicked while booting (an
emulator fault under TCG), and only then: any other boot failure is the error."""
import pytest

from realnode import vmfixture
from realnode.vm import VMError

BUILT = {"busybox": {"path": "b.tar", "ref": "b"}, "pause": {"path": "p.tar", "ref": "p"}}


class FakeVM:
    failures = []
    made = 0

    def __init__(self, **kwargs):
        FakeVM.made += 1
        self.closed = False

    def start(self):
        if FakeVM.failures:
            raise VMError(FakeVM.failures.pop(0))

    def close(self):
        self.closed = True


@pytest.fixture
def fake(monkeypatch):
    saved = dict(vmfixture._shared)
    vmfixture._shared.clear()
    monkeypatch.setattr(vmfixture, "GuestVM", FakeVM)
    monkeypatch.setattr(vmfixture, "ensure_image", lambda: None)
    monkeypatch.setattr(vmfixture, "_build_images", lambda: BUILT)
    FakeVM.made = 0
    yield FakeVM
    vmfixture._shared.clear()
    vmfixture._shared.update(saved)


def test_a_kernel_panic_at_boot_boots_once_more(fake):
    fake.failures = ["the VM stopped\n[ 34.3] Kernel panic - not syncing: Fatal exception"]
    with pytest.warns(UserWarning, match="panicked while booting"):
        vm = vmfixture.shared_vm()
    assert isinstance(vm, FakeVM) and fake.made == 2


def test_a_second_panic_is_the_error(fake):
    fake.failures = ["Kernel panic - not syncing"] * 2
    with pytest.warns(UserWarning), pytest.raises(VMError):
        vmfixture.shared_vm()
    assert fake.made == 2


def test_other_boot_failures_are_not_retried(fake):
    fake.failures = ["no SSH on 127.0.0.1:2222 within 180 s"]
    with pytest.raises(VMError):
        vmfixture.shared_vm()
    assert fake.made == 1
