"""Every function that crosses a package boundary is annotated: a function or a method
of a class defined in one package of tacker_hwaffinity (its top-level packages; a top-level
module is a package of its own) and imported, or read as an attribute of an imported
module, by another package has an annotation for each parameter (``self``/``cls`` aside)
and for its return (``__init__``, as mypy takes it, may leave out ``-> None`` when a
parameter is annotated). Private methods (one leading underscore) are not seams."""
import ast
import collections

from test_private_names import PACKAGE, dotted, imported_from, module_files, private


def package_of(module):
    return module.split(".")[1] if "." in module else module


def annotated(fn, method):
    """True when FN (a FunctionDef) annotates every parameter and its return."""
    args = fn.args
    params = args.posonlyargs + args.args + args.kwonlyargs
    static = any(isinstance(d, ast.Name) and d.id == "staticmethod" for d in fn.decorator_list)
    if method and not static and params:
        params = params[1:]
    params += [a for a in (args.vararg, args.kwarg) if a is not None]
    if any(p.annotation is None for p in params):
        return False
    return fn.returns is not None or (fn.name == "__init__" and bool(params))


def definitions(tree):
    """{name: [(qualified name, line, annotated)]} of the module's functions and classes
    (a class: its methods that are not private)."""
    out = {}
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            out[node.name] = [(node.name, node.lineno, annotated(node, False))]
        elif isinstance(node, ast.ClassDef):
            out[node.name] = [("%s.%s" % (node.name, m.name), m.lineno, annotated(m, True))
                              for m in node.body
                              if isinstance(m, (ast.FunctionDef, ast.AsyncFunctionDef))
                              and not private(m.name)]
    return out


def used_names(module, path, tree, modules):
    """{(module of ours, name)} that MODULE imports or reads as an attribute of a module."""
    is_package = path.endswith("__init__.py")
    bound, used = {}, set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            source = imported_from(node, module, is_package)
            if source in modules:
                for alias in node.names:
                    full = "%s.%s" % (source, alias.name)
                    if full in modules:
                        bound[alias.asname or alias.name] = full
                    else:
                        used.add((source, alias.name))
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name in modules and alias.asname:
                    bound[alias.asname] = alias.name
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute):
            name = dotted(node.value)
            target = bound.get(name) or (name if name in modules else None)
            if target:
                used.add((target, node.attr))
    return used


def unannotated_seams():
    """{package: sorted ['module.function (line)']} of the seams that lack annotations."""
    modules = module_files()
    trees = {}
    for module, path in modules.items():
        with open(path, encoding="utf-8") as f:
            trees[module] = ast.parse(f.read(), path)
    defined = {m: definitions(t) for m, t in trees.items()}
    found = collections.defaultdict(set)
    for module, tree in trees.items():
        for source, name in used_names(module, modules[module], tree, modules):
            if package_of(source) == package_of(module):
                continue
            for qualified, line, ok in defined[source].get(name, ()):
                if not ok:
                    found[package_of(source)].add("%s.%s (line %d)" % (source, qualified,
                                                                       line))
    return {p: sorted(s) for p, s in found.items()}


def test_every_seam_outside_the_pending_packages_is_annotated():
    found = unannotated_seams()
    for package in sorted(found):
        print("%s: %d unannotated seam(s)" % (package, len(found[package])))
        for seam in found[package]:
            print("    " + seam)
    assert not found, "functions other packages use, not annotated:\n" + "\n".join(
        s for p in sorted(found) for s in found[p])


def test_the_scan_finds_an_unannotated_seam_and_passes_an_annotated_one():
    low = ast.parse("def bare(x):\n    return x\n\n\ndef typed(x: int) -> int:\n    return x\n"
                    "\n\nclass C:\n    def __init__(self, n: int):\n        self.n = n\n\n"
                    "    def get(self, k):\n        return k\n")
    got = {n: [ok for _, _, ok in d] for n, d in definitions(low).items()}
    assert got == {"bare": [False], "typed": [True], "C": [True, False]}
    high = ast.parse("from %s import low\nfrom %s.low import typed\n\n\ndef f():\n"
                     "    return low.bare(1) + typed(2)\n" % (PACKAGE, PACKAGE))
    modules = {PACKAGE: "", PACKAGE + ".low": "", PACKAGE + ".high": ""}
    assert used_names(PACKAGE + ".high", "high.py", high, modules) >= {
        (PACKAGE + ".low", "bare"), (PACKAGE + ".low", "typed")}
