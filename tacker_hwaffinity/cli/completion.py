"""``hwaffinity completion bash|zsh``: the shell completion script, as kubectl prints its own.

The script is generated from the command's own argument parser by shtab, so it knows
every subcommand, option and choice of this version; options that take a file or a
directory complete paths. Load it for the current shell, or install it::

    source <(hwaffinity completion bash)
    hwaffinity completion zsh > "${fpath[1]}/_hwaffinity"
"""
import sys

SHELLS = ("bash", "zsh")
# metavar words that mean "a path": those options complete file names
_FILE_WORDS = ("FILE", ".yaml", ".zip", ".json")
_DIR_WORDS = ("DIR",)


def register(sub):
    p = sub.add_parser("completion", help="print the shell completion script (bash or zsh)",
                       description="Print the completion script for SHELL on standard output. "
                                   "bash: source <(hwaffinity completion bash); zsh: "
                                   "hwaffinity completion zsh > \"${fpath[1]}/_hwaffinity\". "
                                   "Exit 0: printed; 2: an unknown shell.")
    p.add_argument("shell", choices=SHELLS, metavar="SHELL", help="bash or zsh")
    p.set_defaults(func=run)


def _mark_paths(parser):
    """Set shtab's completion on every action whose metavar names a file or a directory."""
    import shtab
    for action in parser._actions:
        choices = getattr(action, "choices", None)
        if isinstance(choices, dict):               # a subparsers action
            for child in choices.values():
                _mark_paths(child)
            continue
        metavar = action.metavar if isinstance(action.metavar, str) else ""
        if any(w in metavar for w in _FILE_WORDS):
            action.complete = shtab.FILE
        elif any(w in metavar for w in _DIR_WORDS):
            action.complete = shtab.DIRECTORY


def script(shell):
    """The completion script for SHELL."""
    import shtab
    from tacker_hwaffinity.cli.main import build_parser
    parser = build_parser()
    _mark_paths(parser)
    return shtab.complete(parser, shell=shell)


def run(args):
    sys.stdout.write(script(args.shell))
    return 0
