"""doc/user-guide.md and the story that runs it (tests/tacker_e2e/guide.py): every command
the guide shows belongs to a step the story runs (but those NEEDS lists), every step the
story runs is in the guide, in the order the story runs them, every step the story waits
for is one the guide says to repeat, every file the guide shows is one the story writes
from it or checks against it and the reverse, and the runner's matching and checks mean
what guide.py says. (The commands themselves run in tests/tacker_e2e/test_tacker_cnf.py,
marker ``tacker``, where guide.py also checks the order and the files as they happen.)"""
import ast
import os
import pathlib
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "tacker_e2e"))

import guide as g  # noqa: E402  (tests/tacker_e2e/guide.py, without the package's fixtures)

E2E = os.path.join(HERE, "tacker_e2e")


def _sources():
    out = ""
    for name in sorted(os.listdir(E2E)):
        if name.endswith(".py") and name != "guide.py":
            with open(os.path.join(E2E, name)) as f:
                out += f.read()
    return out


def _page():
    return g.Guide(HERE, {})


# Reviewed: the commands of the guide the story cannot run, and why (the harness does the
# same its own way: tools/tacker-kubernetes-client.sh, the editable install).
NEEDS = {"pip install 'dist/tacker_hwaffinity-0.1.0-py3-none-any.whl[tacker]'": "install",
         "curl -LO https://cloud-images.ubuntu.com/releases/noble/release/"
         "ubuntu-24.04-server-cloudimg-amd64.img": "download"}


def test_every_command_of_the_guide_is_run_by_a_step_of_the_story():
    page = _page()
    assert page.commands
    assert {c.text: c.needs for c in page.commands if "story" not in c.marks} == NEEDS
    ran = set(re.findall(r"guide\.run\(\"([\w-]+)\"", _sources()))
    assert set(page.steps()) == ran


def test_every_file_the_guide_shows_is_one_the_story_uses_and_the_reverse():
    """The story writes a file from the guide (``guide.write``) or checks the file it made
    against the guide (``guide.check_file``); at run time guide.py also fails a step when
    the working directory holds a file neither accounts for."""
    used = re.findall(r"guide\.(write|check_file)\(\"([\w.-]+)\"\)", _sources())
    assert sorted(name for how, name in used if how == "check_file") == [
        "instantiate-vnf-a.json", "vnf-a-params.json"]
    assert set(_page().files) == {name for _, name in used}


STORY = os.path.join(E2E, "test_tacker_cnf.py")
# pytest's scopes, widest first: it sets up a test's fixtures in this order
SCOPES = ("session", "package", "module", "class", "function")


def _tree(path: str) -> ast.Module:
    with open(path, encoding="utf-8") as f:
        return ast.parse(f.read())


def _calls(node: ast.AST) -> list:
    """The calls under NODE, in source order."""
    return sorted((n for n in ast.walk(node) if isinstance(n, ast.Call)),
                  key=lambda n: (n.lineno, n.col_offset))


def _called(call: ast.Call) -> str:
    func = call.func
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def _step(call: ast.Call) -> "str | None":
    """STEP of a call ``guide.run("STEP", ...)``, else None."""
    func = call.func
    if (isinstance(func, ast.Attribute) and func.attr == "run"
            and isinstance(func.value, ast.Name) and func.value.id == "guide"
            and call.args and isinstance(call.args[0], ast.Constant)):
        return call.args[0].value
    return None


def _scope(function: ast.FunctionDef) -> "str | None":
    """The scope of FUNCTION if it is a pytest fixture, else None."""
    for d in function.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Attribute) and target.attr == "fixture":
            given = [k.value.value for k in getattr(d, "keywords", ())
                     if k.arg == "scope" and isinstance(k.value, ast.Constant)]
            return given[0] if given else "function"
    return None


def _steps_at_setup(function: ast.FunctionDef) -> list:
    """The steps FUNCTION runs, in order; a fixture's must come before its yield (this
    file's order does not model teardown)."""
    yields = [n.lineno for n in ast.walk(function) if isinstance(n, (ast.Yield, ast.YieldFrom))]
    steps = [(c.lineno, _step(c)) for c in _calls(function) if _step(c)]
    assert all(line < min(yields, default=line + 1) for line, _ in steps), function.name
    return [step for _, step in steps]


def _story_order() -> list:
    """The steps the story runs (``guide.run("STEP")``), in its run order: the tests of
    test_tacker_cnf.py in source order (pytest runs a module's tests so, and each test of
    the story needs the one before), each after the fixtures it asks for. pytest sets
    those up widest scope first, each after the fixtures it asks for itself, once per
    scope, and a fixture's steps before its yield; the fixtures are the story's and
    tests/tacker_e2e/conftest.py's (the others run no step)."""
    fixtures, tests = {}, []
    for path in (os.path.join(E2E, "conftest.py"), STORY):
        for node in _tree(path).body:
            if isinstance(node, ast.FunctionDef):
                scope = _scope(node)
                entry = ([a.arg for a in node.args.args], _steps_at_setup(node))
                if scope is not None:
                    fixtures[node.name] = (scope,) + entry
                elif path == STORY and node.name.startswith("test_"):
                    tests.append(entry)
    order, done = [], set()

    def set_up(name: str) -> None:
        if name in done or name not in fixtures:
            return
        for arg in fixtures[name][1]:
            set_up(arg)
        done.add(name)
        order.extend(fixtures[name][2])

    for args, steps in tests:
        closure = list(args)            # pytest's closure: breadth first, then by scope
        for name in closure:
            closure += [a for a in fixtures.get(name, (None, []))[1] if a not in closure]
        for name in sorted(closure, key=lambda n: SCOPES.index(
                fixtures[n][0] if n in fixtures else "function")):
            set_up(name)
        order.extend(steps)
        done -= {n for n in done if fixtures[n][0] == "function"}
    return order


def test_the_guide_shows_the_steps_in_the_order_the_story_runs_them():
    """The sequence of the guide's steps is the sequence of the story's ``guide.run``
    calls in run order (:func:`_story_order`): the source order of test_tacker_cnf.py,
    with each fixture's steps where pytest sets it up (VNF-B's package fixture before
    the VIM's, though written after it). Reordering either fails this; at run time
    guide.py fails a step run out of the page's order, so this model of pytest's order
    is checked by the run itself."""
    order = _story_order()
    assert len(order) == len(set(order)), order
    assert _page().steps() == order


# Reviewed: steps the story waits before that are not the guide's to repeat, and why.
NOT_REPEATED = {
    "live-migration": "the story waits for the controller it started to serve its metrics; "
                      "the guide says to wait until the controller's pod is Ready"}


def _waits() -> tuple:
    """({step the story waits for: the waits}, {step run with ``each=``}): a wait is a
    call of a ``wait*``/``_wait*`` helper, or of a function of test_tacker_cnf.py that
    calls one, between the step and the step before it in the same test or fixture."""
    tree = _tree(STORY)
    local = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    waiting = set()
    while True:
        more = {name for name, f in local.items() if name not in waiting and any(
            re.match(r"_?wait", _called(c)) or _called(c) in waiting for c in _calls(f))}
        if not more:
            break
        waiting |= more
    waited, each = {}, set()
    for function in local.values():
        since, first = [], True
        for call in _calls(function):
            step = _step(call)
            if step is None:
                if re.match(r"_?wait", _called(call)) or _called(call) in waiting:
                    since.append(_called(call))
                continue
            if since and not first:
                waited[step] = since
            if any(k.arg == "each" for k in call.keywords):
                each.add(step)
            since, first = [], False
    return waited, each


def test_every_step_the_story_waits_for_is_one_the_guide_says_to_repeat():
    """Where the story waits for something before a step (a relabel, an eviction, a
    Pending replica landing, the controller's gauges), the guide's first command of the
    step ends in ``# repeat until it says so`` (guide.py repeats it too); a step run with
    ``each=`` (what a user's waiting lets happen) has a repeated command."""
    waited, each = _waits()
    assert {"placement", "after-migration", "after-colocation", "after-migrate-back",
            "retry-scale-upf"} <= set(waited), waited
    assert set(NOT_REPEATED) <= set(waited), waited
    page = _page()
    for step in sorted(set(waited) - set(NOT_REPEATED)):
        first = next(c for c in page.commands if c.marks.get("story") == step)
        assert g.repeats(first), (step, waited[step], first)
    assert each == {"instantiate-vnf-a", "heal-worker", "scale-vnf-a"}, each
    for step in each:
        assert any(g.repeats(c) for c in page.commands if c.marks.get("story") == step), step


def test_the_readme_links_the_guide():
    with open(os.path.join(os.path.dirname(HERE), "README.md")) as f:
        assert "(doc/user-guide.md)" in f.read()


@pytest.mark.parametrize("shown,printed,before,after", [
    (["id: <VIM>"], ["id: 1f11"], {}, {"VIM": "1f11"}),                      # binds
    (["id: <VIM>"], ["id: 1f11"], {"VIM": "1f11"}, {"VIM": "1f11"}),         # bound: same
    (["id: <VIM>"], ["id: 2e22"], {"VIM": "1f11"}, None),                    # bound: other
    (["<A> <A>"], ["x x"], {}, {"A": "x"}),                                  # repeats
    (["<A> <A>"], ["x y"], {}, None),
    (["<A>   <B>"], ["vm-1 compute1"], {}, {"A": "vm-1", "B": "compute1"}),  # widths
    (["<CA>"], ["-----BEGIN", "abc", "-----END"], {}, {"CA": "-----BEGIN\nabc\n-----END"}),
    (["<CA>"], [], {}, None),                                                # nothing printed
    (["a", "..."], ["a", "b", "c"], {}, {}),
    (["...", "wrote x (<N> files)"], ["note: 1", "wrote x (19 files)"], {}, {"N": "19"}),
    (["a"], ["a", "b"], {}, None),                                           # a line unsaid
    (["a.b"], ["axb"], {}, None),                                            # literal text
])
def test_output_matching(shown, printed, before, after):
    assert g.output_matches(shown, printed, before) == after


def test_fill_indents_a_value_of_several_lines_as_its_placeholder():
    assert g.fill("ca: |\n  <CA>\nx: <X>\n", {"CA": "l1\nl2", "X": "1"}) == \
        "ca: |\n  l1\n  l2\nx: 1\n"
    with pytest.raises(g.GuideError, match="<Y> is not known"):
        g.fill("<Y>", {})


def _workdir(tmp_path: pathlib.Path, page_text: str) -> tuple:
    """(working directory, page path) for a page of PAGE_TEXT, the page outside it."""
    page = tmp_path / "guide.md"
    page.write_text(page_text)
    work = tmp_path / "work"
    work.mkdir()
    return work, page


def test_a_step_runs_its_commands_binds_and_repeats(tmp_path, monkeypatch):
    monkeypatch.setattr(g, "POLL_S", 0.05)
    tmp_path, page = _workdir(
        tmp_path, "<!-- story: one -->\n```console\n$ echo id: abc\nid: <ID>\n"
        "$ cat n 2>/dev/null || (echo x >> count; false)  # repeat until it says so\n"
        "<ID>\n```\n\n<!-- file: n -->\n```\n<ID>\n```\n")
    run = g.Guide(str(tmp_path), dict(os.environ), path=str(page))
    assert run.steps() == ["one"]
    tries = []

    def each():            # before each command, and before each try of one: the file
        tries.append(1)    # appears once the repeated command has failed
        if (tmp_path / "count").exists() and not (tmp_path / "n").exists():
            run.write("n")
    run.values["ID"] = "abc"
    assert run.run("one", each=each)["ID"] == "abc"
    assert (tmp_path / "n").read_text() == "abc\n"
    assert len(tries) == 3 and (tmp_path / "count").read_text() == "x\n"
    with pytest.raises(g.GuideError, match="shows no block for the story's step 'two'"):
        run.run("two")


def test_a_mismatch_names_the_line_and_shows_both_outputs_normalised(tmp_path):
    work, page = _workdir(tmp_path, "<!-- story: one -->\n```console\n$ echo id: 1f11\n"
                                    "id: <ID>\n$ echo 1f11 x\n<ID> y\n```\n")
    run = g.Guide(str(work), dict(os.environ), path=str(page))
    run.values["ID"] = "1f11"
    with pytest.raises(g.GuideError) as e:
        run.run("one")
    assert "guide.md:5: echo 1f11 x" in str(e.value)
    assert "printed:\n<ID> x" in str(e.value)


TWO_STEPS = ("<!-- story: one -->\n```console\n$ echo 1 > one.out\n```\n\n"
             "<!-- story: two -->\n```console\n$ echo 2\n2\n```\n\n"
             "<!-- file: made.json -->\n```json\n{\n...\n  \"id\": \"<ID>\"\n}\n```\n")


def test_a_step_run_out_of_the_pages_order_fails(tmp_path):
    work, page = _workdir(tmp_path, TWO_STEPS)
    run = g.Guide(str(work), dict(os.environ), path=str(page))
    run.run("two")
    with pytest.raises(g.GuideError, match="runs the step 'one' after 'two'"):
        run.run("one")
    in_order = g.Guide(str(work), dict(os.environ), path=str(page))
    in_order.accounted.add("one.out")
    in_order.run("one")
    in_order.run("two")
    assert in_order.ran == ["one", "two"]


def test_a_file_the_page_neither_shows_nor_makes_fails_the_next_step(tmp_path):
    work, page = _workdir(tmp_path, TWO_STEPS)
    run = g.Guide(str(work), dict(os.environ), path=str(page))
    for name in g.GIVEN:
        (work / name).mkdir()
    run.run("one")                                # one.out: made by the page's command
    (work / "made.json").write_text("{}\n")
    (work / "other.json").write_text("{}\n")
    with pytest.raises(g.GuideError, match="holds made.json, other.json, which the page"):
        run.run("two")
    (work / "other.json").unlink()
    (work / "made.json").write_text('{\n  "a": 1,\n  "id": "7f"\n}\n')
    assert run.check_file("made.json")["ID"] == "7f"
    run.run("two")


def test_a_file_the_story_made_otherwise_than_shown_fails(tmp_path):
    work, page = _workdir(tmp_path, TWO_STEPS)
    run = g.Guide(str(work), dict(os.environ), path=str(page))
    run.values["ID"] = "7f"
    (work / "made.json").write_text('{\n  "id": "8e"\n}\n')
    with pytest.raises(g.GuideError, match="made.json is not what the page shows"):
        run.check_file("made.json")
    assert "made.json" not in run.accounted
