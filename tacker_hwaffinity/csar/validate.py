"""``csar validate``: every check over one package, as a list of problems.

In order: archive member names; TOSCA.meta and every hash block (ours and
Tacker's verdict); Tacker's upload (``csar_utils.load_csar_data``); every
deployment flavour parsed (and, for a VNF, translated); every Vnflcm hook's
driver registered and byte-identical to the installed one; every image a
VDU boots from carried, with its SHA-512 as the VDU's checksum, and every
image carried one a VDU boots from; for a CNF (YAML under ``Files/kubernetes/``)
every manifest against the Kubernetes models and, given a cluster snapshot, the
placement ``hwaffinity plan`` predicts.

Every YAML or JSON file is read by ``objects.package_yaml``, within its bounds
(size, values with aliases expanded, depth, CPU time): a TOSCA file over them is
a problem found before Tacker's upload check and the flavours, which are then
skipped (tosca-parser would read it unbounded).
"""
import dataclasses
import os
import tempfile
from collections.abc import Callable
from typing import TYPE_CHECKING

from tacker_hwaffinity.constants import DEFAULT_HOST_LABEL
from tacker_hwaffinity.csar import (instantiation, integrity, manifests, placement, sw_images,
                                    tacker_checks, vnfd)
from tacker_hwaffinity.csar.build import IMAGES_DIR
from tacker_hwaffinity.csar.problems import Problem, from_error
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import namespaces, package_yaml
from tacker_hwaffinity.scheduling.diagnosis import check_carried
from tacker_hwaffinity.vnfpackage import zipio

if TYPE_CHECKING:   # what validate() is given, named for types only: not loaded to validate
    from tacker_hwaffinity.intake.read import Intake
    from tacker_hwaffinity.objects.schema import Check

K8S_DIR = "Files/kubernetes/"
_MANIFEST_EXT = (".yaml", ".yml", ".json")


class _Told(list):
    """A list of a Report that tells its listener of each item as it is added."""

    def __init__(self, kind, listen):
        super().__init__()
        self.kind, self.listen = kind, listen

    def append(self, item):
        super().append(item)
        self.listen(self.kind, item)

    def extend(self, items):
        for item in items:
            self.append(item)


@dataclasses.dataclass
class Report:
    """What validate found. LISTEN, when given, is called (kind, item) as each problem,
    note or check is found (kind "problem", "note" or "checked"), for output that streams."""
    package: str
    problems: list = dataclasses.field(default_factory=list)
    notes: list = dataclasses.field(default_factory=list)
    checks: list = dataclasses.field(default_factory=list)
    listen: object = None

    def __post_init__(self):
        if self.listen is not None:
            self.problems, self.notes, self.checks = (
                _Told(kind, self.listen) for kind in ("problem", "note", "checked"))

    def unique(self):
        """Problems without repeats, in the order found."""
        seen, out = set(), []
        for p in self.problems:
            if str(p) not in seen:
                seen.add(str(p))
                out.append(p)
        return out

    def to_dict(self):
        return {"package": self.package, "problems": [p.to_dict() for p in self.unique()],
                "notes": list(self.notes), "checks": list(self.checks)}


def _upload(report, zip_path, work):
    theirs = tacker_checks.upload(zip_path, work)
    what = "Tacker upload checks (csar_utils.load_csar_data): "
    if theirs is None:
        report.checks.append(what + "accepted")
        return
    report.checks.append(what + "refused")
    if not any(theirs in p.message for p in report.problems):
        report.problems.append(Problem(os.path.basename(zip_path), "Tacker refuses the "
                                       "upload: %s" % theirs))


def _imports(report, root):
    """Are the package's imports all its own files (no fetch, no cycle)? If not, a
    problem, and Tacker's upload check and the flavours (which would follow them)
    are skipped."""
    from tacker_hwaffinity.translator import loader
    try:
        count = loader.check_imports(root)
    except package_yaml.OverBound as e:
        report.problems.append(vnfd.relative(e, root))
        report.checks.append("YAML files: one over the loader's bounds; Tacker's upload check "
                             "and the flavours skipped (they would read it unbounded)")
        return False
    except InputError as e:
        report.problems.append(vnfd.relative(e, root))
        report.checks.append("imports: refused; Tacker's upload check and the flavours "
                             "skipped (they would follow them)")
        return False
    report.checks.append("imports: %d TOSCA file(s), every import a file of the package "
                         "(nothing fetched)" % count)
    return True


def _manifests(report, root, names, schema_check=None):
    """[(object, file)] of the CNF manifests, checked against the models and, given
    SCHEMA_CHECK (an objects.schema.Check), the release's OpenAPI schema."""
    objects = []
    files = [n for n in names if n.startswith(K8S_DIR) and n.endswith(_MANIFEST_EXT)]
    by_models = bool(files) and manifests.models_available()
    for name in files:
        try:
            docs = package_yaml.read_manifests(os.path.join(root, name), name)
        except InputError as e:
            report.problems.append(Problem(name, e.message, e.obj, e.field))
            continue
        for obj in docs:
            if by_models:
                report.problems.extend(manifests.check(obj, name))
            objects.append((obj, name))
    if by_models:
        report.checks.append("Kubernetes manifests: %d file(s), %d object(s) against the "
                             "kubernetes client models" % (len(files), len(objects)))
    elif files:
        report.notes.append("the kubernetes client here has no pydantic models (they came "
                            "with 37; Tacker 16 needs 36): the manifests are checked against "
                            "the OpenAPI schema only")
    if objects and schema_check is not None:
        # a field the client models already faulted is one problem, not two
        faulted = {(p.source, p.obj, p.field) for p in report.problems}
        report.problems.extend(from_error(e) for e in schema_check.review(objects)
                               if (e.source, e.obj, e.field) not in faulted)
        if schema_check.release is not None:
            report.checks.append("Kubernetes manifests: %d object(s) against the %s OpenAPI "
                                 "schema" % (len(objects), schema_check.release.name))
    return files, objects


def _unbooted_images(defs, names, problems, checks):
    """A problem for each member of Files/images/ (NAMES: the package's) that no node
    template of DEFS boots from (no ``tosca.artifacts.nfv.SwImage`` artifact's file is
    it): Tacker uploads only the images the artifacts name, so it is carried for
    nothing, and likely given for a VDU whose artifact names another file."""
    images = [n for n in names if n.startswith(IMAGES_DIR) and not n.endswith("/")]
    if not images:
        return
    booted = {path for vnfd, data in defs.items()
              for _, path, _ in sw_images.image_vdus(vnfd, data)}
    for name in images:
        if name not in booted:
            problems.append(Problem(name, "no VDU boots from it: no "
                                    "tosca.artifacts.nfv.SwImage artifact's file is this "
                                    "path (the VDUs boot from %s)"
                                    % (", ".join(sorted(booted)) or "no carried image")))
    checks.append("images: %d under %s, each looked for among the VDUs' image artifacts"
                  % (len(images), IMAGES_DIR))


def validate(zip_path: str, plan_inputs: "Intake | None" = None,
             topology_key: str = DEFAULT_HOST_LABEL, limits: zipio.Limits = zipio.Limits(),
             schema_check: "Check | None" = None,
             listen: Callable[[str, object], None] | None = None,
             deployment: instantiation.Deployment = instantiation.Deployment()) -> Report:
    """Report on the package ZIP_PATH.

    PLAN_INPUTS: the cluster as ``intake.read.cluster`` reads it (an ``Intake``
    with its snapshot, profile and notes), to plan a CNF's manifests; None to skip
    that check. DEPLOYMENT: which manifests an instantiation deploys, and in which
    namespace (``instantiation``).
    LIMITS: what the archive may unpack to; over them it is an InputError,
    raised before anything is extracted or fetched. SCHEMA_CHECK: see ``_manifests``.
    LISTEN: called (kind, item) as each is found (``Report``).
    """
    report = Report(zip_path, listen=listen)
    problems, notes, checks = report.problems, report.notes, report.checks
    with zipio.open_zip(zip_path) as z, \
            tempfile.TemporaryDirectory(prefix="hwaffinity-validate-") as tmp:
        root, work = os.path.join(tmp, "package"), os.path.join(tmp, "tacker")
        os.makedirs(root)
        os.makedirs(work)
        root = os.path.realpath(root)
        names = integrity.archive(z, problems)
        zipio.extract_safe(z, root, limits)
        checks.append("archive: %d file(s)" % len(names))
        blocks = integrity.tosca_meta(z, names, problems)
        count = integrity.artifacts(blocks, names, z, zip_path, root, problems, notes)
        checks.append("TOSCA.meta: %d hashed artifact(s), each also through Tacker's "
                      "_convert_artifacts" % count)
        offline = _imports(report, root)
        if offline:
            _upload(report, zip_path, work)
        defs = vnfd.definitions(root, names, problems)
        files, objects = _manifests(report, root, names, schema_check)
        if files:
            notes.append("a CNF package (manifests under %s): its flavours are parsed, not "
                         "translated to HOT" % K8S_DIR)
        if offline:
            vnfd.flavours(root, not files, problems, checks)
        vnfd.hooks(root, defs, names, problems, notes, checks)
        sw_images.check(root, defs, names, problems, notes, checks)
        _unbooted_images(defs, names, problems, checks)
    objects, refused, landing = instantiation.deployed(objects, files, deployment)
    problems.extend(refused)
    if objects and plan_inputs is not None:
        snapshot = plan_inputs.content.snapshot
        check_carried(snapshot.nodes, topology_key)
        if snapshot.namespaces:
            try:
                namespaces.check_exist(objects, {n.name for n in snapshot.namespaces})
            except InputError as e:
                problems.append(from_error(e))
        found, more, summary = placement.check(objects, snapshot,
                                               plan_inputs.content.profile, topology_key)
        problems.extend(found)
        notes.extend(list(plan_inputs.notes) + landing + more)
        checks.append(summary)
    elif plan_inputs is not None:
        notes.append("--cluster given, but the package has no Kubernetes manifests to plan")
    return report
