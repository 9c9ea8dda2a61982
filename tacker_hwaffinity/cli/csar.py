"""``hwaffinity csar build`` and ``hwaffinity csar validate`` (doc/csar.md).

build: exit 0 written; 2 bad input (nothing written).
validate: exit 0 no problem; 1 problems (listed, each with file and field);
2 unusable input (not a zip, over the archive limits, unreadable cluster snapshot).
"""
import argparse
import sys

from tacker_hwaffinity import table
from tacker_hwaffinity.cli import output
from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
from tacker_hwaffinity.vnfpackage import zipio

EXIT_OK, EXIT_PROBLEMS = 0, 1


def register(subparsers):
    parser = subparsers.add_parser(
        "csar", help="build or validate a VNF package (CSAR)",
        description="Build a deterministic VNF package with fresh TOSCA.meta hashes and the "
                    "installed MgmtDriver, or check a package the way Tacker does at upload "
                    "and instantiation. Exit 0: built, or no problem found; 1: validate "
                    "found problems; 2: bad or unusable input (nothing written).")
    sub = parser.add_subparsers(dest="csar_command", metavar="ACTION",
                                parser_class=type(parser))
    sub.required = True
    b = sub.add_parser(
        "build", help="write a CSAR zip from a package source directory",
        description="Read the package source directory SRC_DIR and write PKG.zip: every "
                    "file of it except hidden ones and images (left out with a note "
                    "unless given with --image, which goes in as Files/images/<name> "
                    "and sets the sw_image_data checksum of the VDUs whose "
                    "tosca.artifacts.nfv.SwImage artifact it is to its SHA-512); the "
                    "installed MgmtDriver files where a VNFD's mgmt-drivers-hwaffinity "
                    "artifact points; the ETSI SOL001 type files a Definitions file "
                    "imports; and a TOSCA-Metadata/TOSCA.meta with a fresh SHA-256 for "
                    "every artifact. The same inputs give the same bytes. Exit 0: "
                    "written (notes on stderr); 2: bad input, named with its file and "
                    "field, and nothing written; an --image that no VDU boots from is "
                    "bad input.")
    b.add_argument("source", metavar="SRC_DIR", help="the package source directory")
    b.add_argument("--output-file", required=True, metavar="PKG.zip",
                   help="the package to write (replaced atomically; its directory is "
                        "created if missing)")
    output.add_output_arg(b, (output.TEXT, output.NAME, output.JSON, output.YAML),
                          path_option="--output-file")
    b.add_argument("--image", action="append", default=[], metavar="FILE",
                   help="an image to include as Files/images/<name>, the path a VDU's "
                        "tosca.artifacts.nfv.SwImage artifact names (repeatable; images in "
                        "SRC_DIR are left out)")
    b.add_argument("--etsi-definitions", metavar="DIR",
                   help="directory of the ETSI SOL001 type files to add (default: the "
                        "installed tacker's copies)")
    b.set_defaults(func=run_build)
    v = sub.add_parser(
        "validate", help="check a CSAR the way Tacker does, and more",
        description="Read the package PKG.zip (within the archive limits below) and run "
                    "every check: member names; TOSCA.meta and every hash block, also "
                    "through Tacker's own upload check; every deployment flavour parsed "
                    "(a VNF's also translated to Heat); every Vnflcm hook's MgmtDriver "
                    "registered and identical to the installed one; every image a VDU "
                    "boots from carried with its SHA-512 as the checksum, and every "
                    "Files/images/ member booted by some VDU; a CNF's manifests against "
                    "the Kubernetes models and, with --cluster, planned as hwaffinity plan "
                    "plans them. Each check, note and problem is printed as found. Exit "
                    "0: no problem; 1: problems (each with its file, object and field); "
                    "2: unusable input (not a zip, over the limits, an unreadable "
                    "cluster snapshot).")
    v.add_argument("package", metavar="PKG.zip", help="the package (a CSAR zip) to check")
    v.add_argument("--cluster", action="append", metavar="FILE",
                   help="cluster snapshot ('kubectl get nodes,pods,namespaces -A -o yaml'); "
                        "plan the CNF's manifests on it (repeatable)")
    v.add_argument("--scheduler-config", metavar="FILE",
                   help="a KubeSchedulerConfiguration for the plan (as hwaffinity plan)")
    v.add_argument("--topology-key", default=DEFAULT_HOST_LABEL, metavar="KEY",
                   help="node label naming the compute host (default: %(default)s)")
    where = v.add_mutually_exclusive_group()
    where.add_argument("--instantiate-request", metavar="FILE",
                       help="the InstantiateVnfRequest (JSON) the CNF will be instantiated "
                            "with: plan the manifests its additionalParams "
                            "lcm-kubernetes-def-files lists, in its namespace, as Tacker does")
    where.add_argument("-n", "--namespace", metavar="NS",
                       help="plan the manifests in this namespace, as Tacker's namespace "
                            "additionalParam puts them (default: the one they name, else "
                            "'default')")
    output.add_output_arg(v, (output.TEXT, output.JSON, output.YAML))
    from tacker_hwaffinity.cli.common import add_schema_args
    add_schema_args(v)
    v.add_argument("--max-member-bytes", type=int, default=zipio.Limits.member_bytes,
                   metavar="N", help="refuse a member declaring more (default: %(default)s, "
                                     "8 GiB: a large image needs more)")
    v.add_argument("--max-package-bytes", type=int, default=zipio.Limits.total_bytes,
                   metavar="N", help="refuse a package unpacking to more (default: "
                                     "%(default)s, 16 GiB)")
    v.add_argument("--max-ratio", type=int, default=zipio.Limits.ratio, metavar="N",
                   help="refuse a member over 64 KiB compressed more than N:1 (default: "
                        "%(default)s; a deflated raw image of zeros may need more)")
    v.set_defaults(func=run_validate)


def run_build(args):
    from tacker_hwaffinity.csar import build
    result = build.build(args.source, args.output_file, images=args.image,
                         etsi_dir=args.etsi_definitions)
    if args.output in output.STRUCTURED:
        output.dump(output.document("PackageBuild", {
            "path": result.path, "members": list(result.members),
            "notes": list(result.notes)}), args.output)
        return EXIT_OK
    for note in result.notes:
        sys.stderr.write("note: %s\n" % note)
    if args.output == output.NAME:
        output.names([("file", result.path)])
    else:
        print("wrote %s (%d files)" % (result.path, len(result.members)))
    return EXIT_OK


def run_validate(args: argparse.Namespace) -> int:
    from tacker_hwaffinity.cli import progress
    from tacker_hwaffinity.cli.common import schema_check
    from tacker_hwaffinity.intake import read, source
    from tacker_hwaffinity.csar import instantiation, validate
    from tacker_hwaffinity.errors import InputError
    from tacker_hwaffinity.objects import namespaces
    if args.scheduler_config and not args.cluster:
        raise InputError("needs --cluster", field="--scheduler-config")
    if args.instantiate_request:
        deployment = instantiation.from_request(args.instantiate_request)
    elif args.namespace is not None:
        deployment = instantiation.Deployment(
            namespace=namespaces.target(args.namespace).name, origin="--namespace")
    else:
        deployment = instantiation.Deployment()
    check = schema_check(args)
    limits = zipio.Limits(member_bytes=args.max_member_bytes,
                          total_bytes=args.max_package_bytes, ratio=args.max_ratio)
    with progress.Progress("csar validate") as status:
        status.phase("reading the cluster" if args.cluster else "opening the package")
        plan_inputs = (read.cluster(source.cluster_source(args.cluster, None, None), check,
                                    args.scheduler_config) if args.cluster else None)
        listen = _Lines(status, args.output == output.TEXT)
        status.phase("checking the package")
        report = validate.validate(args.package, plan_inputs, args.topology_key, limits,
                                   check, listen=listen, deployment=deployment)
    problems = report.unique()
    if args.output in output.STRUCTURED:
        output.dump(output.document("PackageValidation",
                                    dict(report.to_dict(), warnings=check.warnings)),
                    args.output)
    else:
        print("%s: %s" % (args.package, "%d problem(s)" % len(problems) if problems else "OK"))
    return EXIT_PROBLEMS if problems else EXIT_OK


class _Lines:
    """Prints each check, note and problem of a validation as it is found (text output;
    a problem found twice once), and says on the status line how many checks are done."""

    def __init__(self, status, printing):
        self.status, self.printing = status, printing
        self.printed, self.checks = set(), 0

    def __call__(self, kind, item):
        if kind == "checked":
            self.checks += 1
            self.status.phase("checking the package: %d check(s) done" % self.checks)
        line = "%s: %s" % (kind, item)
        if self.printing and line not in self.printed:
            self.printed.add(line)
            self.status.write("".join(ln + "\n" for ln in table.wrap(line)), sys.stdout)
