"""One booted test VM (tests/realnode/vm.py) for the whole pytest session.

Test files use it by importing the fixture::

    from realnode.vmfixture import guest_vm  # noqa: F401  (the fixture)

    def test_x(guest_vm):
        guest_vm.check("nproc")

Booting costs ~40-60 s under TCG, so every module that imports ``guest_vm``
gets the SAME guest: the VM is kept here, at module level, not in pytest's
per-definition fixture cache (a session fixture imported into two test modules
is two fixture definitions, which would boot twice). It is closed when the
pytest session ends (``config.add_cleanup``), or at interpreter exit.

The guest runs containerd 1.7 with NRI, with the ``busybox`` and ``pause``
images of tests/realnode/images.py imported; ``guest_images`` gives their refs.
Tests must remove the pods and containers they create: the guest is shared.

A missing capability (QEMU, or an image that cannot be built; busybox for the
container images) skips the test, or fails it under CI (ci_policy.unavailable).
A guest that does not boot is an error, never a skip.
"""
import os
import subprocess
import warnings

import pytest

from ci_policy import unavailable
from realnode import images as images_mod
from realnode.vm import (APT_INSTALL, GuestVM, ImageUnavailable, VMError, cache_root,
                         ensure_image)

_shared = {}


def images_workdir():
    return os.path.join(cache_root(), "realnode-images")


def _build_images():
    try:
        images_mod.find_busybox()
    except FileNotFoundError:
        subprocess.run(["bash", APT_INSTALL, "busybox-static"], capture_output=True,
                       timeout=600)
    try:
        return images_mod.build_images(images_workdir())
    except FileNotFoundError as exc:
        _shared["unavailable"] = "container images for the test VM: %s" % exc
        unavailable(_shared["unavailable"])


def shared_vm():
    """The session's booted :class:`GuestVM` (booted on first use)."""
    if "vm" in _shared:
        return _shared["vm"]
    if "error" in _shared:                  # do not boot again after a failed boot
        raise _shared["error"]
    if "unavailable" in _shared:            # nor build again after a failed build
        unavailable(_shared["unavailable"])
    try:
        ensure_image()
    except ImageUnavailable as exc:
        _shared["unavailable"] = "no QEMU test VM: %s" % exc
        unavailable(_shared["unavailable"])
    built = _build_images()
    for attempt in (1, 2):
        vm = GuestVM(images=[built["busybox"]["path"], built["pause"]["path"]],
                     sandbox_image=built["pause"]["ref"])
        try:
            vm.start()
            break
        except VMError as exc:
            vm.close()
            # A guest kernel that panics while booting under TCG (seen once in a CI run:
            # a double fault in kmalloc, 34 s into the boot) is the emulator's, not the
            # test's: boot a fresh guest once, and say so; a second failure is the error.
            if attempt == 1 and "Kernel panic" in str(exc):
                warnings.warn("the test VM's kernel panicked while booting; booting it "
                              "again once:\n%s" % _panic_lines(str(exc)))
                continue
            _shared["error"] = exc
            raise
        except Exception as exc:
            vm.close()
            _shared["error"] = exc
            raise
    _shared["vm"] = vm
    _shared["images"] = {name: info["ref"] for name, info in built.items()}
    return vm


def _panic_lines(text):
    return "\n".join(line for line in text.splitlines()
                     if "panic" in line or "Oops" in line or "RIP:" in line)


def close_shared_vm():
    vm = _shared.pop("vm", None)
    _shared.pop("error", None)
    _shared.pop("unavailable", None)
    if vm is not None:
        vm.close()


@pytest.fixture(scope="session")
def guest_vm(request):
    """The session's booted guest (see the module doc)."""
    if _shared.get("cleanup_for") is not request.config:
        request.config.add_cleanup(close_shared_vm)
        _shared["cleanup_for"] = request.config
    return shared_vm()


@pytest.fixture(scope="session")
def guest_images(guest_vm):
    """``{"busybox": ref, "pause": ref}`` of the images imported into the guest."""
    return dict(_shared["images"])
