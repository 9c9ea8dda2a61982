"""Every parser of ``hwaffinity`` says, in its own --help, what it does, what it reads and
its exit statuses, and every subcommand has a line in its parent's list; no help text
sends the reader to ``doc/*.md``, which a wheel does not install."""
import argparse

import pytest

from tacker_hwaffinity.cli.main import HelpFormatter, build_parser


def _parsers(parser, path=(), line=None):
    """(path, parser, its LINE in the parent's list of subcommands) of PARSER and of every
    parser below it."""
    yield path, parser, line
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            lines = {a.dest: a.help for a in action._choices_actions}
            for name, sub in action.choices.items():
                yield from _parsers(sub, path + (name,), lines.get(name))


ALL = list(_parsers(build_parser()))
IDS = [" ".join(path) or "hwaffinity" for path, _, _ in ALL]


@pytest.mark.parametrize("path,parser,line", ALL, ids=IDS)
def test_every_parser_has_a_description_with_its_exit_statuses(path, parser, line):
    assert parser.description and len(parser.description.split()) >= 12, parser.prog
    assert "exit" in parser.description.lower(), "%s: no exit statuses" % parser.prog
    if path:
        assert line, "%s: no help line in its parent's list" % parser.prog


def _texts(parser):
    """Every text PARSER's --help shows: description, epilog, each argument's help."""
    formatter = HelpFormatter(parser.prog)
    yield "description", parser.description or ""
    yield "epilog", parser.epilog or ""
    for action in parser._actions:
        if action.help and action.help is not argparse.SUPPRESS:
            yield "/".join(action.option_strings) or action.dest, formatter._expand_help(action)
        for choice in getattr(action, "_choices_actions", ()):
            yield "subcommand %s" % choice.dest, choice.help or ""


@pytest.mark.parametrize("path,parser,line", ALL, ids=IDS)
def test_no_help_text_points_at_the_repository_s_doc_directory(path, parser, line):
    for where, text in _texts(parser):
        assert "doc/" not in text, "%s %s: %s" % (parser.prog, where, text)
    assert "doc/" not in parser.format_help()
