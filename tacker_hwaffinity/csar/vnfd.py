"""The VNFD of an extracted package: flavours, and the MgmtDriver its hooks name.

Flavours load with the offline loader of ``hwaffinity translate``
(``translator.loader``), parse with tosca-parser and, for VNFs Tacker
translates to HOT (not CNFs: those go to a Kubernetes VIM), translate with
heat-translator and our extension (``translator.run``).
"""
import os

from tacker_hwaffinity.csar import drivers, tacker_checks
from tacker_hwaffinity.csar.problems import Problem
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import package_yaml


def relative(error, root):
    """The InputError as a Problem with its file relative to the package root."""
    source = error.source or ""
    if source.startswith(root + os.sep):
        source = os.path.relpath(source, root).replace(os.sep, "/")
    return Problem(source or "Definitions/", error.message, error.obj, error.field)


def definitions(root, names, problems):
    """{path: parsed YAML} of every Definitions/*.yaml file (read within the bounds of
    ``package_yaml``); each that cannot be read is a problem."""
    out = {}
    for name in names:
        if name.startswith("Definitions/") and name.endswith((".yaml", ".yml")):
            try:
                out[name] = package_yaml.read(os.path.join(root, name), source=name)
            except InputError as e:
                problems.append(Problem(name, e.message, e.obj, e.field))
    return out


def flavours(root, translate, problems, checks):
    """Parse (and TRANSLATE) every deployment flavour of the package at ROOT."""
    from tacker_hwaffinity import translator
    from tacker_hwaffinity.translator import loader, run
    translator.register()
    run.quiet_libraries()
    ids = set()
    for path in loader.flavour_candidates(root):
        try:
            fid = loader.flavour_of(package_yaml.read(path))
        except InputError:
            continue                    # reported by definitions() or the loader below
        if fid is not None:
            ids.add(str(fid))
    if not ids:
        problems.append(Problem("Definitions/", "no deployment flavour file (a file with "
                                "substitution_mappings.properties.flavour_id)"))
    for fid in sorted(ids):
        try:
            with loader.open_vnfd(root, fid) as vnfd:
                tosca = run.parse(vnfd)
                done = "parsed (tosca-parser, imports offline)"
                if translate:
                    run.translate(tosca, vnfd.parsed_params, source=vnfd.path)
                    done += ", translated (heat-translator + tacker-hwaffinity)"
        except InputError as e:
            problems.append(relative(e, root))
            continue
        checks.append("flavour %s: %s" % (fid, done))


def _artifact(hook, names, problems):
    """(package path, v1/v2) of the hook's artifact file, or None after a problem."""
    base = "topology_template.node_templates.%s.artifacts.%s" % (hook.node, hook.key)
    art = hook.artifact
    if not isinstance(art, dict):
        problems.append(Problem(hook.vnfd, "names artifact %r, which node %s does not define"
                                % (hook.key, hook.node), "node %s" % hook.node, hook.field))
        return None
    if art.get("type") != drivers.PYTHON_ARTIFACT:
        problems.append(Problem(hook.vnfd, "must be %s (Tacker runs Python drivers only), "
                                "not %r" % (drivers.PYTHON_ARTIFACT, art.get("type")),
                                "node %s" % hook.node, base + ".type"))
    try:
        path, version = drivers.package_path(art.get("file"), hook.vnfd, base + ".file")
    except InputError as e:
        problems.append(Problem(hook.vnfd, e.message, "node %s" % hook.node, e.field))
        return None
    if path not in names:
        problems.append(Problem(hook.vnfd, "%s is not in the package (the artifact is missing)"
                                % path, "node %s" % hook.node, base + ".file"))
        return None
    return path, version


def hooks(root, defs, names, problems, notes, checks):
    """Every Vnflcm hook names a registered driver whose file is the installed one."""
    registered = drivers.registered()
    installed = {}          # driver name -> its module file, for the drivers hooks use
    done = set()
    for vnfd, data in sorted(defs.items()):
        for hook in drivers.hooks(vnfd, data):
            if (vnfd, hook.node, repr(hook.key)) in done:
                continue
            done.add((vnfd, hook.node, repr(hook.key)))
            _hook(root, hook, names, registered, installed, problems, notes)
            checks.append("%s: node %s: Vnflcm hooks use %s" % (vnfd, hook.node, hook.key))


def _hook(root, hook, names, registered, installed, problems, notes):
    where = "node %s" % hook.node
    if not isinstance(hook.key, str):
        problems.append(Problem(hook.vnfd, "must name an artifact", where, hook.field))
        return
    found = _artifact(hook, names, problems)
    version = found[1] if found else drivers.V1
    if version == drivers.V1 and hook.key not in registered:
        problems.append(Problem(hook.vnfd, "%s is not a registered MgmtDriver (entry points "
                                "of %s: %s)" % (hook.key, drivers.ENTRY_POINT_GROUP,
                                                ", ".join(sorted(registered)) or "none"),
                                where, hook.field))
    for dep in hook.dependencies:
        if dep in registered:
            problems.append(Problem(hook.vnfd, "dependency %s is itself a registered "
                                    "MgmtDriver; Tacker refuses that" % dep, where,
                                    hook.field))
    if not found:
        return
    path, version = found
    if version == drivers.V1 and hook.key in registered and hook.key not in installed:
        try:
            installed[hook.key] = drivers.installed_file(registered[hook.key])
        except InputError as e:
            problems.append(Problem(hook.vnfd, "%s is registered, but %s" % (hook.key, e.message),
                                    where, hook.field))
    if version == drivers.V1 and hook.key in installed:
        theirs = tacker_checks.mgmt_driver(hook.key, {hook.key: hook.artifact}, root, installed)
        if theirs:
            problems.append(Problem(path, "is not the installed %s (rebuild the package); "
                                    "Tacker: %s" % (installed[hook.key], theirs), where))
    elif version == drivers.V2 and hook.key == drivers.DRIVER_KEY:
        _v2_script(root, path, problems, notes)


def _v2_script(root, path, problems, notes):
    try:
        script = drivers.installed_file(drivers.MODULES[drivers.V2])
    except InputError as e:
        notes.append("%s: not compared: %s" % (path, e.message))
        return
    with open(script, "rb") as a, open(os.path.join(root, path), "rb") as b:
        if a.read() != b.read():
            problems.append(Problem(path, "differs from the installed %s; Tacker v2 runs "
                                    "this copy (rebuild the package)" % script))
