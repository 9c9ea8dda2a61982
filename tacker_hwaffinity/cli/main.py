"""``hwaffinity`` entry point: builds the subcommand parsers and maps errors to exits.

Each subcommand module exposes ``register(subparsers)``; the parser it adds
sets ``func`` to a callable taking the parsed arguments and returning the
exit status. Bad input (``InputError``) is one line on stderr and exit 2.
"""
import argparse
import importlib
import sys

from tacker_hwaffinity import __version__
from tacker_hwaffinity.errors import InputError

# Subcommand modules under tacker_hwaffinity.cli, in help order.
COMMAND_MODULES = ("explain", "plan", "audit", "numa", "translate", "relabel", "csar", "agent",
                   "controller", "webhook")

EXIT_BAD_INPUT = 2


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        self.print_usage(sys.stderr)
        self.exit(EXIT_BAD_INPUT, "%s: error: %s\n" % (self.prog, message))


def build_parser(command=None):
    """The parser; with COMMAND (a known subcommand), only that subcommand's module is
    imported: a command pays for its own dependencies only (the node agent, for one,
    never loads the scheduling engine's numpy)."""
    parser = _Parser(prog="hwaffinity",
                     description="Hardware-aware affinity for Kubernetes on OpenStack.")
    parser.add_argument("--version", action="version", version=__version__)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    sub.required = True
    for name in (command,) if command in COMMAND_MODULES else COMMAND_MODULES:
        importlib.import_module("tacker_hwaffinity.cli." + name).register(sub)
    return parser


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except InputError as e:
        sys.stderr.write("hwaffinity %s: error: %s\n" % (args.command, e))
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return 0


if __name__ == "__main__":
    sys.exit(main())
