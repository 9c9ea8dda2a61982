"""``hwaffinity numa``: container NUMA affinity explain and placement plan."""


def _not_ready(args):
    import sys
    sys.stderr.write("hwaffinity numa: not implemented yet\n")
    return 1


def register(subparsers):
    parser = subparsers.add_parser("numa", help="container NUMA affinity (CRI-RM annotations)")
    sub = parser.add_subparsers(dest="numa_command", metavar="SUBCOMMAND")
    sub.required = True
    for name in ("explain", "plan"):
        p = sub.add_parser(name)
        p.add_argument("pods", nargs="*")
        p.set_defaults(func=_not_ready)
    return parser
