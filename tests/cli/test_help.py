"""Every parser of the ``hwaffinity`` command shows its options' defaults in --help, once,
every option says what it is, no reStructuredText mark reaches the terminal, and the
servers listen on loopback unless told otherwise (the manifests pass 0.0.0.0
explicitly)."""
import argparse
import contextlib
import io

import pytest

from tacker_hwaffinity.cli.main import COMMAND_MODULES, HelpFormatter, build_parser, main


def _parsers(parser, path=()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, path + (name,))


def _all_parsers():
    return list(_parsers(build_parser()))


def _meaningful(action):
    return (action.option_strings and action.default not in (None, False, [], ())
            and action.default is not argparse.SUPPRESS)


@pytest.mark.parametrize("path,parser", _all_parsers(),
                         ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_help_shows_every_default(path, parser):
    text = "".join(parser.format_help().split())     # wrapping may split a value
    for action in parser._actions:
        if _meaningful(action):
            shown = "".join(("default: %s" % (action.default,)).split())
            in_own_words = "".join(("default %s" % (action.default,)).split())
            assert shown in text or in_own_words in text, (path, action.option_strings)


def test_every_command_module_is_walked():
    names = {path[0] for path, _ in _all_parsers() if path}
    assert names == set(COMMAND_MODULES)


@pytest.mark.parametrize("argv,attr,port", [
    (["agent", "--node", "n1"], "metrics_address", 9464),
    (["controller", "--worker-metadata", "c=1"], "metrics_address", 9465),
    (["webhook", "serve"], "address", 8443),
])
def test_servers_default_to_loopback(argv, attr, port):
    args = build_parser(argv[0]).parse_args(argv)
    assert getattr(args, attr) == "127.0.0.1:%d" % port


def test_help_does_not_print_the_notification_url_s_password(monkeypatch):
    monkeypatch.setenv("NOVA_NOTIFICATIONS_URL", "rabbit://nova:s3cret@mq:5672/")
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit):
        main(["controller", "--help"])
    assert "s3cret" not in out.getvalue()


@pytest.mark.parametrize("path,parser", _all_parsers(),
                         ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_every_option_is_explained_and_its_default_said_once(path, parser):
    formatter = HelpFormatter(" ".join(path))
    for action in parser._actions:
        if action.help == argparse.SUPPRESS or isinstance(action, argparse._SubParsersAction):
            continue
        name = "/".join(action.option_strings) or action.dest
        text = formatter._expand_help(action) if action.help else ""
        words = text.replace("(default: %s)" % (action.default,), "").strip()
        assert words, "%s %s: no help text" % (path, name)
        said = text.count("(default: ") + text.count("(default ")
        assert said <= 1, "%s %s: the default twice: %s" % (path, name, text)
        assert "`" not in text, "%s %s: reST in the help: %s" % (path, name, text)


@pytest.mark.parametrize("path,parser", _all_parsers(),
                         ids=lambda v: " ".join(v) if isinstance(v, tuple) else "")
def test_no_description_shows_rest(path, parser):
    for text in (parser.description or "", parser.epilog or ""):
        assert "`" not in text, (path, text)
