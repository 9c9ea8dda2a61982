"""``hwaffinity`` entry point: builds the subcommand parsers and maps errors to exits.

Each subcommand module exposes ``register(subparsers)``; the parser it adds
sets ``func`` to a callable taking the parsed arguments and returning the
exit status. Bad input (``InputError``) is one line on stderr and exit 2, and so
is a module that an extra provides and that is not installed (``extras.missing``:
the message names the extra and how to install it). Every parser shows its
options' defaults in ``--help`` (``HelpFormatter``). Ctrl-C (``KeyboardInterrupt``) ends any
command quietly with exit 130, as a shell reports a process SIGINT ended; the long-running
components (agent, controller, webhook serve) handle SIGINT themselves and stop cleanly.
"""
import argparse
import copy
import importlib
import platform
import sys

from tacker_hwaffinity import __version__, extras
from tacker_hwaffinity.errors import InputError

# Subcommand modules under tacker_hwaffinity.cli, in help order.
COMMAND_MODULES = ("explain", "plan", "audit", "numa", "translate", "relabel", "csar", "agent",
                   "controller", "webhook", "completion")

EXIT_BAD_INPUT = 2
EXIT_INTERRUPTED = 128 + 2   # 128 + SIGINT, what a shell reports for a process Ctrl-C ended


class HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """argparse's defaults formatter, also for options given without a help text.

    Defaults that say nothing (None, False of a flag, an empty list) are not shown."""

    def _format_action(self, action):
        if not action.help and _shows_default(action):
            action = copy.copy(action)
            action.help = "(default: %(default)s)"
        return super()._format_action(action)

    def _get_help_string(self, action):
        text = action.help or ""
        if "%(default)" in text or not _shows_default(action):
            return text
        return text + " (default: %(default)s)"


def _shows_default(action):
    return (bool(action.option_strings) and action.default is not argparse.SUPPRESS
            and action.default not in (None, False, [], ()))


class _Parser(argparse.ArgumentParser):
    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        # the innermost command's parser sets it last: errors name the command as its
        # usage does ("hwaffinity csar validate")
        self.set_defaults(command_name=self.prog)

    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, "%s: error: %s\n" % (self.prog, message))


def build_parser(command=None):
    """The parser; with COMMAND (a known subcommand), only that subcommand's module is
    imported: a command pays for its own dependencies only (the node agent, for one,
    never loads the scheduling engine's numpy)."""
    parser = _Parser(prog="hwaffinity",
                     description="Hardware-aware affinity for Kubernetes on OpenStack: "
                                 "predict and explain kube-scheduler's placements, audit "
                                 "what one physical host failing takes, place containers "
                                 "on NUMA nodes, translate and check VNF packages, and run "
                                 "the node agent, the controller and the webhooks. 'hwaffinity "
                                 "COMMAND --help' says what each command reads and its exit "
                                 "statuses; 2 is always bad input or a bad option, 130 an "
                                 "interrupt (Ctrl-C).")
    parser.add_argument("--version", action=_Version, nargs=0,
                        help="print the version of tacker-hwaffinity, Python and the "
                             "Kubernetes releases it checks manifests against, and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in (command,) if command in COMMAND_MODULES else COMMAND_MODULES:
        importlib.import_module("tacker_hwaffinity.cli." + name).register(sub)
    return parser


class _Version(argparse.Action):
    """--version, its text computed only when asked (it looks at the schema package)."""

    def __call__(self, parser, *_):
        sys.stdout.write(version_text() + "\n")
        parser.exit(0)


def kubernetes_versions():
    """The Kubernetes releases manifests are checked against: 1.30-1.37, or what is
    missing for the check."""
    from tacker_hwaffinity.objects import schema
    try:
        minors = schema.supported_minors()
    except schema.Unavailable:
        return "1.%d and newer; this installation's schema data cannot be read" % schema.FLOOR
    return "1.%d-1.%d" % (minors[0], minors[-1])


def version_text():
    """``hwaffinity 0.1.0 (Python 3.11.7; Kubernetes 1.30-1.37)``."""
    return "hwaffinity %s (Python %s; Kubernetes %s)" % (
        __version__, platform.python_version(), kubernetes_versions())


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    command = argv[0] if argv else None
    name = "hwaffinity %s" % command
    try:
        parser = build_parser(command)
        args = parser.parse_args(argv)
        command, name = args.command, args.command_name
        return args.func(args)
    except InputError as e:
        sys.stderr.write("%s: error: %s\n" % (name, e))
        return EXIT_BAD_INPUT
    except ModuleNotFoundError as e:
        message = extras.missing(e, command)
        if message is None:
            raise
        sys.stderr.write("%s: error: %s\n" % (name, message))
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return 0
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
