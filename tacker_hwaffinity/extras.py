"""The optional dependencies (pyproject.toml's optional dependencies) and how to install them.

tacker-hwaffinity is not on PyPI: it is installed from a checkout
(``pip install '.[EXTRA]'`` in its root) or from a wheel built there once
(``pip wheel --no-deps -w dist .``, then ``pip install 'dist/...whl[EXTRA]'``).
A command that needs a module an extra provides says which extra, and how,
in one line (``missing``); ``cli.main`` does that for every command.
Standard library only: the hints must work whatever is missing.
"""
from collections.abc import Sequence

from tacker_hwaffinity import __version__

# Top-level module -> the extras (pyproject.toml [project.optional-dependencies]) that install it.
# tests/cli/test_extras.py checks this table against pyproject.toml. A base requirement that
# an extra only narrows (the tacker extra's kubernetes<37) is no module an extra provides:
# missing, it is a broken installation. The schema extra is empty (an alias kept for old
# install lines): every install has the schema check.
MODULE_EXTRAS: dict[str, tuple[str, ...]] = {
    "cryptography": ("webhook",),
    "paramiko": ("ssh", "tacker"),
    "keystoneauth1": ("openstack", "controller", "tacker"),
    "heatclient": ("openstack",),
    "novaclient": ("openstack",),
    "oslo_messaging": ("controller",),
    "toscaparser": ("translator",),
    "translator": ("translator",),
    "tacker": ("tacker",),
}
# Distribution (as pyproject.toml names it) -> its top-level module, for that check.
DISTRIBUTION_MODULES: dict[str, str] = {
    "cryptography": "cryptography", "paramiko": "paramiko", "keystoneauth1": "keystoneauth1",
    "python-heatclient": "heatclient", "python-novaclient": "novaclient",
    "oslo.messaging": "oslo_messaging", "tosca-parser": "toscaparser",
    "heat-translator": "translator", "tacker": "tacker",
}
# The extras each subcommand's documentation names (README "Install").
COMMAND_EXTRAS: dict[str, tuple[str, ...]] = {
    "translate": ("translator",),
    "csar": ("tacker",),
    "relabel": ("ssh", "openstack"),
    "controller": ("controller",),
    "webhook": ("webhook",),
}


def install_hint(extras: str | Sequence[str]) -> str:
    """How to install EXTRAS (a name or a sequence of names) into this Python."""
    names = ",".join((extras,) if isinstance(extras, str) else extras)
    return ("pip install '.[%s]' in the tacker-hwaffinity checkout, or pip install "
            "'dist/tacker_hwaffinity-%s-py3-none-any.whl[%s]' from a wheel built there "
            "(pip wheel --no-deps -w dist .)" % (names, __version__, names))


def extras_for(module: str | None, command: str | None = None) -> tuple[str, ...]:
    """The extras to install for a missing MODULE (a dotted name) under COMMAND, or ()."""
    provided = MODULE_EXTRAS.get((module or "").split(".")[0], ())
    if not provided:
        return ()
    wanted = COMMAND_EXTRAS.get(command, ()) if command else ()
    if any(e in provided for e in wanted):
        return wanted               # e.g. relabel: ssh and openstack together
    return provided[:1]


def missing(error: ImportError, command: str | None = None) -> str | None:
    """The one-line message for ModuleNotFoundError ERROR, or None when no extra
    provides the module (a broken installation, not a missing extra)."""
    module = getattr(error, "name", None) or ""
    extras = extras_for(module, command)
    if not extras:
        return None
    return "needs the %s extra%s: the Python module '%s' is not installed; %s" % (
        ",".join(extras), "s" if len(extras) > 1 else "", module.split(".")[0],
        install_hint(extras))


def require(command: str, extras: Sequence[str] | None = None) -> None:
    """Raise ModuleNotFoundError, which ``cli.main`` turns into the install hint, when a
    module of EXTRAS (default: COMMAND's) is missing: called before a command asks
    anything of the user, so that nobody enters credentials for a command that cannot run."""
    import importlib.util
    for extra in extras or COMMAND_EXTRAS.get(command, ()):
        for module, provided in MODULE_EXTRAS.items():
            if extra in provided and importlib.util.find_spec(module) is None:
                raise ModuleNotFoundError("No module named '%s'" % module, name=module)
