"""``hwaffinity translate``: a VNFD or CSAR to Heat templates, offline.

Runs the translation Tacker's v1 path runs (tosca-parser, then heat-translator
with the tacker-hwaffinity extension registered) and writes the main template
(``main.yaml``) and every nested AutoScalingGroup template next to it.

Exit status: 0 written; 2 bad input (one line naming file, policy and field).
"""
import os
import sys

from tacker_hwaffinity import extras, safewrite
from tacker_hwaffinity.cli import output, progress
from tacker_hwaffinity.errors import InputError


def register(subparsers):
    parser = subparsers.add_parser(
        "translate", help="translate a VNFD or CSAR to Heat templates (offline)",
        description="Translate a SOL001 VNFD (a CSAR, an unpacked package, a flavour "
                    "file or a plain template) to HOT the way Tacker's v1 path does, "
                    "with AntiAffinityRule/AffinityRule turned into Nova server groups "
                    "and availability zones, and write main.yaml and every nested "
                    "AutoScalingGroup template into --output-dir. Parameters the stack "
                    "needs without a default are noted on stderr. Exit 0: written; 2: "
                    "bad input, one line naming the file, policy and field.")
    parser.add_argument("vnfd", metavar="VNFD_OR_CSAR",
                        help="CSAR (.zip/.csar), package directory or VNFD YAML")
    parser.add_argument("--flavour", metavar="ID",
                        help="deployment flavour id (needed when there are several)")
    parser.add_argument("--output-dir", metavar="DIR", default=".",
                        help="directory for main.yaml and the nested templates, created if "
                             "missing")
    output.add_output_arg(parser, (output.TEXT, output.NAME, output.JSON, output.YAML),
                          path_option="--output-dir")
    parser.set_defaults(func=run)


def _write(directory, files):
    """Write FILES ({name: text}) in DIRECTORY (made if missing), each replacing what is
    there (a link at a name is replaced, not followed); a name that is not a plain file
    name (a nested template named after a policy: ``../x_res.yaml``) is refused."""
    try:
        folder = safewrite.Directory(directory)
    except OSError as e:
        raise InputError("cannot create directory: %s" % (e.strerror or e),
                         source=directory, field="--output-dir")
    written = []
    with folder:
        for name, text in sorted(files.items(), key=lambda kv: (kv[0] != "main.yaml", kv[0])):
            path = os.path.join(directory, name)
            try:
                folder.replace(name, text.encode("utf-8"))
            except OSError as e:
                raise InputError("cannot write: %s" % (e.strerror or e), source=path)
            written.append(path)
    return written


def _notes(rules):
    """Parameters the stack needs that have no default (zone rules)."""
    from tacker_hwaffinity.translator import names
    notes = []
    for rule in rules:
        if rule.scope == names.SCOPE_ZONE and not rule.zones:
            param = names.zones_parameter(rule.name, rule.anti)
            if rule.anti:
                notes.append("parameter %s has no default: give at least %d distinct "
                             "availability zones (members %s, in this order)"
                             % (param, len(rule.members), ", ".join(rule.members)))
            else:
                notes.append("parameter %s has no default: give the availability zone of "
                             "%s" % (param, ", ".join(rule.members)))
    return notes


def run(args):
    try:
        from tacker_hwaffinity import translator
        from tacker_hwaffinity.translator import loader, rules as rules_mod, run as runmod
    except ImportError as e:    # pragma: no cover - the translator extra is missing
        raise InputError("needs the translator extra (%s): %s"
                         % (extras.install_hint("translator"), e))
    try:
        translator.register()
    except ImportError as e:
        raise InputError("needs heat-translator and tosca-parser, the translator extra "
                         "(%s): %s" % (extras.install_hint("translator"), e))
    runmod.quiet_libraries()
    with progress.Progress("translate") as status, \
            loader.open_vnfd(args.vnfd, args.flavour) as vnfd:
        status.phase("parsing the VNFD")
        tosca = runmod.parse(vnfd)
        status.phase("translating to HOT")
        files = runmod.translate(tosca, vnfd.parsed_params, source=vnfd.path)
        rules = rules_mod.collect(tosca)
    written = _write(args.output_dir, files)
    notes = _notes(rules)
    if args.output in output.STRUCTURED:
        output.dump(output.document("Translation", {"files": written, "notes": notes}),
                    args.output)
        return 0
    if args.output == output.NAME:
        output.names(("file", path) for path in written)
    else:
        for path in written:
            print("wrote %s" % path)
    for note in notes:
        sys.stderr.write("note: %s\n" % note)
    return 0
