"""No module of tacker_hwaffinity imports or reads another module's private name (one
leading underscore: ``from x import _y``, ``x._y``); dunder names are public. A name that
another module needs is public, with a name that says what it is."""
import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "tacker_hwaffinity"


def module_files(root=ROOT):
    """{module name: path} of every module of the package under ROOT."""
    out = {}
    for folder, dirs, files in os.walk(os.path.join(root, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in files:
            if name.endswith(".py"):
                rel = os.path.relpath(os.path.join(folder, name), root)[:-3]
                parts = rel.split(os.sep)
                if parts[-1] == "__init__":
                    parts.pop()
                out[".".join(parts)] = os.path.join(folder, name)
    return out


def private(name):
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def imported_from(node, module, is_package):
    """The absolute module name a ``from ... import`` reads from."""
    if not node.level:
        return node.module
    base = module.split(".")
    base = base[:len(base) - node.level + (1 if is_package else 0)]
    return ".".join(base + ([node.module] if node.module else []))


def dotted(node):
    """'a.b.c' of a Name or a chain of Attributes on a Name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    if isinstance(node, ast.Name):
        return ".".join([node.id] + parts[::-1])
    return None


def crossings(module, path, modules):
    """['path:line: text'] of every private name of another module that MODULE uses."""
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    is_package = path.endswith("__init__.py")
    bound, found = {}, []     # local name -> the module of ours it names
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = imported_from(node, module, is_package)
            if not source or not source.startswith(PACKAGE) or source == module:
                continue
            for alias in node.names:
                if private(alias.name):
                    found.append("%s:%d: from %s import %s" % (path, node.lineno, source,
                                                               alias.name))
                if "%s.%s" % (source, alias.name) in modules:
                    bound[alias.asname or alias.name] = "%s.%s" % (source, alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE):
                    if any(private(p) for p in alias.name.split(".")):
                        found.append("%s:%d: import %s" % (path, node.lineno, alias.name))
                    if alias.asname:
                        bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and private(node.attr):
            name = dotted(node.value)
            target = bound.get(name) or (name if name in modules else None)
            if target and target != module:
                found.append("%s:%d: %s.%s" % (path, node.lineno, target, node.attr))
    return found


def test_no_module_uses_another_modules_private_names():
    modules = module_files()
    found = [c for m, p in sorted(modules.items()) for c in crossings(m, p, modules)]
    assert not found, "private names used across modules:\n" + "\n".join(
        os.path.relpath(c, ROOT) for c in found)


def test_the_scan_sees_an_import_and_a_read_of_a_private_name(tmp_path):
    """The scan can fail: a module that imports one private name of another and reads a
    second through the module is reported twice."""
    folder = tmp_path / PACKAGE
    folder.mkdir()
    (folder / "__init__.py").write_text("")
    (folder / "low.py").write_text("_hidden = 1\n_other = 2\n__version__ = '1'\n")
    (folder / "high.py").write_text(
        "from tacker_hwaffinity import low\nfrom tacker_hwaffinity.low import _hidden\n\n\n"
        "def f():\n    return _hidden + low._other + len(low.__version__)\n")
    modules = module_files(str(tmp_path))
    found = crossings("tacker_hwaffinity.high", str(folder / "high.py"), modules)
    assert [c.split(": ", 1)[1] for c in found] == [
        "from tacker_hwaffinity.low import _hidden", "tacker_hwaffinity.low._other"]
