"""The layers of doc/design.md ("Layers") hold: import-linter's contract in .importlinter
(pinned in the test extras), imports inside functions counted like those at a module's
head, every package and module of tacker_hwaffinity placed in a layer."""
import os
import shutil
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# lint-imports, run by the interpreter of the tests (its console script need not be on PATH);
# no cache: a cache directory would be left in the checkout
LINT_IMPORTS = [sys.executable, "-c", "from importlinter.cli import lint_imports_command; "
                "lint_imports_command()", ".importlinter", "--no-cache", "--no-logo"]


def lint_imports(root):
    env = dict(os.environ, PYTHONPATH=root)
    return subprocess.run(LINT_IMPORTS, cwd=root, env=env, capture_output=True, text=True,
                          timeout=120)


def test_the_layers_hold():
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr


def test_an_import_up_a_layer_inside_a_function_breaks_the_contract(tmp_path):
    """objects/ (low) importing cli/ (the top) inside a function: the contract is broken,
    naming that import."""
    shutil.copytree(os.path.join(ROOT, "tacker_hwaffinity"), tmp_path / "tacker_hwaffinity",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.join(ROOT, ".importlinter"), tmp_path)
    with open(tmp_path / "tacker_hwaffinity" / "objects" / "naming.py", "a") as f:
        f.write("\n\ndef climbs():\n    from tacker_hwaffinity.cli import main\n"
                "    return main\n")
    done = lint_imports(str(tmp_path))
    assert done.returncode == 1, done.stdout + done.stderr
    assert "tacker_hwaffinity.objects.naming -> tacker_hwaffinity.cli.main" in done.stdout, \
        done.stdout
