"""doc/user-guide.md and the story that runs it (tests/tacker_e2e/guide.py): every command
the guide shows belongs to a step the story runs (but those NEEDS lists), every step the
story runs is in the guide, every file it writes is shown, and the runner's matching
means what guide.py says. (The commands themselves run in
tests/tacker_e2e/test_tacker_cnf.py, marker ``tacker``.)"""
import os
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


def test_every_file_the_guide_shows_is_written_by_the_story():
    written = set(re.findall(r"guide\.write\(\"([\w.-]+)\"\)", _sources()))
    assert set(_page().files) == written


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


def test_a_step_runs_its_commands_binds_and_repeats(tmp_path, monkeypatch):
    monkeypatch.setattr(g, "POLL_S", 0.05)
    page = tmp_path / "guide.md"
    page.write_text(
        "<!-- story: one -->\n```console\n$ echo id: abc\nid: <ID>\n"
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
    page = tmp_path / "guide.md"
    page.write_text("<!-- story: one -->\n```console\n$ echo id: 1f11\nid: <ID>\n"
                    "$ echo 1f11 x\n<ID> y\n```\n")
    run = g.Guide(str(tmp_path), dict(os.environ), path=str(page))
    run.values["ID"] = "1f11"
    with pytest.raises(g.GuideError) as e:
        run.run("one")
    assert "guide.md:5: echo 1f11 x" in str(e.value)
    assert "printed:\n<ID> x" in str(e.value)
