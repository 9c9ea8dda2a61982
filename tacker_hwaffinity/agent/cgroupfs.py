"""The node agent's cgroup adapter: find kubelet's cgroup tree and write cpusets there.

:func:`detect` recognises exactly one layout (reference section 6.1) and
refuses anything else, so the agent never guesses where a container lives:

* cgroup v1: ``<root>/cpuset/kubepods.slice`` (systemd driver) or
  ``<root>/cpuset/kubepods`` (cgroupfs driver);
* cgroup v2: ``<root>/cgroup.controllers`` lists ``cpuset`` and
  ``<root>/kubepods.slice`` or ``<root>/kubepods`` exists.

:class:`Writer` sets a container's ``cpuset.cpus`` and ``cpuset.mems``. The
v1 kernel refuses a child CPU or node outside its parent (EACCES), so a
write that leaves the parent's set first grows every level between kubepods
and the container to old | new, top-down, and only then writes the target
into the container (reference 6.2, "move"). Those levels also hold the
pod's other containers, so they are grown but never shrunk here. v2 does
not check writes against the parent; what counts there is the read-only
``cpuset.cpus.effective``, which is what the writer reads back.
"""
import errno
import os
import re
from dataclasses import dataclass
from typing import NamedTuple

from tacker_hwaffinity.objects.qos import QOS_CLASSES
from tacker_hwaffinity.numa.cgroups import cgroup_path
from tacker_hwaffinity.numa.cpuset import format_list, parse_list

KUBEPODS = {"systemd": "kubepods.slice", "cgroupfs": "kubepods"}
RUNTIMES = ("containerd", "cri-o")
_ID = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_-]*$")   # no "/" or "..": ids become path parts


class LayoutError(Exception):
    """The cgroup tree is not one the agent knows how to write (one sentence)."""


class Vanished(Exception):
    """The container's cgroup directory is gone: the container exited or was
    restarted (a restarted container is a new cgroup, reference 6.3)."""

    def __init__(self, path):
        super().__init__("cgroup directory %s is gone" % path)
        self.path = path


class WriteError(Exception):
    """The kernel refused a cpuset write, or the file reads back something else.

    ``path`` is the file, ``value`` the list written (None for a read),
    ``errno_name`` e.g. "EACCES" (None when the file read back ``readback``)."""

    def __init__(self, path, value, errno_name=None, readback=None):
        self.path, self.value, self.errno_name, self.readback = path, value, errno_name, readback
        if errno_name is not None:
            action = "read %s" % path if value is None else "write %r to %s" % (value, path)
            msg = "cannot %s: %s (%s)" % (action, errno_name,
                                           os.strerror(getattr(errno, errno_name, 0)))
        elif value is None:
            msg = "%s reads %r, which is not a kernel list" % (path, readback)
        else:
            msg = "wrote %r to %s but it reads back %r" % (value, path, readback)
        super().__init__(msg)


class MapError(ValueError):
    """A placement id has no entry in the recorded-to-real id map."""


@dataclass(frozen=True)
class Layout:
    """Where kubelet's tree is: ``base`` is the kubepods directory itself."""

    root: str
    version: int
    driver: str
    base: str

    @property
    def mount(self):
        """The directory kubelet's relative paths start from (cpuset/ for v1)."""
        return os.path.dirname(self.base)

    @property
    def files(self):
        """(written cpus, written mems, read cpus, read mems) file names."""
        if self.version == 1:
            return ("cpuset.cpus", "cpuset.mems", "cpuset.cpus", "cpuset.mems")
        return ("cpuset.cpus", "cpuset.mems", "cpuset.cpus.effective", "cpuset.mems.effective")

    def describe(self):
        """One log line, e.g. 'cgroup v1 cpuset, systemd driver, at /sys/fs/cgroup/cpuset/...'."""
        kind = "cgroup v1 cpuset" if self.version == 1 else "cgroup v2 cpuset"
        return "%s, %s driver, at %s" % (kind, self.driver, self.base)

    def check_writable(self):
        """Raise LayoutError unless this process may write kubepods' cpuset.cpus."""
        path = os.path.join(self.base, "cpuset.cpus")
        if not os.path.isfile(path):
            hint = ("" if self.version == 1 else
                    " (is cpuset enabled in %s/cgroup.subtree_control?)" % self.mount)
            raise LayoutError("%s does not exist%s" % (path, hint))
        if not os.access(path, os.W_OK):
            raise LayoutError("%s is not writable by uid %d" % (path, os.geteuid()))

    def container_dir(self, pod_uid, qos_class, container_id, runtime=None):
        """Absolute cgroup directory of a container. CONTAINER_ID may carry its
        ``<runtime>://`` prefix (as in containerStatuses), which then names
        the runtime unless RUNTIME is given."""
        prefix, sep, bare = container_id.partition("://")
        if sep:
            container_id, runtime = bare, runtime or prefix
        runtime = runtime or "containerd"
        if runtime not in RUNTIMES:
            raise ValueError("unsupported container runtime %r (expected %s)"
                             % (runtime, ", ".join(RUNTIMES)))
        if qos_class not in QOS_CLASSES:
            raise ValueError("unknown QoS class %r (expected %s)"
                             % (qos_class, ", ".join(QOS_CLASSES)))
        for what, value in (("pod UID", pod_uid), ("container ID", container_id)):
            if not isinstance(value, str) or not _ID.match(value):
                raise ValueError("%s %r is not usable in a cgroup path" % (what, value))
        rel = cgroup_path(pod_uid, qos_class, container_id, runtime, self.driver)
        return os.path.join(self.mount, rel)


def detect(root="/sys/fs/cgroup"):
    """The Layout under ROOT, or LayoutError saying what was found instead."""
    v1 = [n for n in KUBEPODS.values() if os.path.isdir(os.path.join(root, "cpuset", n))]
    controllers = _controllers(root)
    v2 = [] if controllers is None else [
        n for n in KUBEPODS.values() if os.path.isdir(os.path.join(root, n))]
    found = ["cpuset/" + n for n in v1] + ["%s (cgroup v2)" % n for n in v2]
    if len(found) > 1:
        raise LayoutError("unknown cgroup layout under %s: found both %s, expected exactly one"
                          % (root, " and ".join(found)))
    if v1:
        return Layout(root, 1, _driver(v1[0]), os.path.join(root, "cpuset", v1[0]))
    if v2:
        if "cpuset" not in controllers:
            raise LayoutError("unknown cgroup layout under %s: cgroup v2 with %s but no cpuset "
                              "controller (cgroup.controllers: %s)"
                              % (root, v2[0], " ".join(controllers) or "empty"))
        return Layout(root, 2, _driver(v2[0]), os.path.join(root, v2[0]))
    raise LayoutError("unknown cgroup layout under %s: no kubepods.slice or kubepods in cpuset/ "
                      "(v1) or beside cgroup.controllers (v2); found %s" % (root, _listing(root)))


def _driver(name):
    return "systemd" if name.endswith(".slice") else "cgroupfs"


def _controllers(root):
    try:
        with open(os.path.join(root, "cgroup.controllers")) as f:
            return f.read().split()
    except FileNotFoundError:
        return None


def _listing(root):
    try:
        names = sorted(os.listdir(root))
    except FileNotFoundError:
        return "no such directory"
    except OSError as e:
        return "an unreadable directory (%s)" % errno.errorcode.get(e.errno, e.errno)
    if not names:
        return "an empty directory"
    more = " and %d more" % (len(names) - 12) if len(names) > 12 else ""
    return "only " + ", ".join(names[:12]) + more


class Applied(NamedTuple):
    """What apply() did (or, dry, would do): ``before``/``after`` are the
    container's (cpus, mems) in real ids; ``writes`` the (file, list) pairs
    in the order written."""

    changed: bool
    before: tuple
    after: tuple
    writes: tuple = ()


class Writer:
    """Reads and writes container cpusets under a Layout.

    CPU_MAP / MEM_MAP translate placement ids to real ids ({int: int}); they
    are for a placement computed on a recorded machine larger than this one.
    DRY_RUN computes the writes and returns them without writing."""

    def __init__(self, layout, cpu_map=None, mem_map=None, dry_run=False):
        self.layout = layout
        self.cpu_map = None if cpu_map is None else dict(cpu_map)
        self.mem_map = None if mem_map is None else dict(mem_map)
        self.dry_run = dry_run
        self._levels = {}       # v1 pod and QoS levels: (cpus, mems) as last read or grown

    def forget_levels(self):
        """Read the pod and QoS levels again from now on (a full reconcile does this:
        the kubelet sets them when it creates them, and only this writer grows them)."""
        self._levels = {}

    def read(self, path):
        """(cpus, mems) of the cgroup directory PATH as frozensets."""
        return self._read_pair(path, path)

    def _read_pair(self, path, owner):
        _, _, cpus_file, mems_file = self.layout.files
        return (self._read(os.path.join(path, cpus_file), owner),
                self._read(os.path.join(path, mems_file), owner))

    def apply(self, path, cpus, mems, known=None):
        """Make PATH's cpuset (CPUS, MEMS), mapped through the id maps; see the
        module docstring for the write order. Returns an Applied. KNOWN: the
        (cpus, mems) this writer read back from PATH last time (``Applied.after``),
        which saves reading them again; None reads them."""
        target = (map_ids(cpus, self.cpu_map, "CPU", "cpu_map"),
                  map_ids(mems, self.mem_map, "memory node", "mem_map"))
        before = known if known is not None else self.read(path)
        plan = self._plan(path, before, target)
        if not plan:
            return Applied(False, before, before, ())
        writes = tuple((f, format_list(v)) for f, v in plan)
        if self.dry_run:
            return Applied(True, before, target, writes)
        try:
            for file, text in writes:
                self._write(file, text, path)
        except (Vanished, WriteError):
            for level in _levels_between(self.layout.base, path):   # not known now
                self._levels.pop(level, None)
            raise
        if known is None:
            after = self.read(path)
        else:   # read back what was written to the container; the rest is KNOWN
            after = list(before)
            for i in (0, 1):
                if before[i] != target[i]:
                    after[i] = self._read(os.path.join(path, self.layout.files[2 + i]), path)
            after = tuple(after)
        for i, (file, ids) in enumerate(zip(self.layout.files[:2], target)):
            if after[i] != ids:
                raise WriteError(os.path.join(path, file), format_list(ids),
                                 readback=format_list(after[i]))
        return Applied(True, before, after, writes)

    def _plan(self, path, before, target):
        cpus_file, mems_file = self.layout.files[:2]
        plan = []
        if self.layout.version == 1:
            for level in _levels_between(self.layout.base, path):
                current = self._levels.get(level)
                if current is None:
                    current = self._read_pair(level, path)
                grown = list(current)
                for i in (1, 0):        # mems, then cpus: the kernel checks each on its own
                    if not target[i] <= current[i]:
                        name = (cpus_file, mems_file)[i]
                        grown[i] = current[i] | target[i]
                        plan.append((os.path.join(level, name), grown[i]))
                if not self.dry_run:
                    self._levels[level] = tuple(grown)
        for i in (1, 0):
            if before[i] != target[i]:
                plan.append((os.path.join(path, (cpus_file, mems_file)[i]), target[i]))
        return plan

    def _read(self, file, owner):
        try:
            with open(file) as f:
                text = f.read()
        except OSError as e:
            raise _failure(e, file, None, owner) from None
        try:
            return frozenset(parse_list(text))
        except ValueError:
            raise WriteError(file, None, readback=text.strip()) from None

    @staticmethod
    def _write(file, text, owner):
        # a trailing newline: a zero-length write never reaches the kernel
        data = (text + "\n").encode()
        try:
            fd = os.open(file, os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(fd, data)
            finally:
                os.close(fd)
        except OSError as e:
            raise _failure(e, file, text, owner) from None


def map_ids(ids, mapping, what, name):
    """IDS (placement ids) as this machine's, through MAPPING ({int: int}; None: as
    they are); WHAT and NAME word the errors. Raises ValueError/MapError."""
    ids = frozenset(ids)
    if not ids:
        raise ValueError("an empty %s set would leave the container nowhere to run" % what)
    if mapping is None:
        return ids
    missing = sorted(i for i in ids if i not in mapping)
    if missing:
        raise MapError("%s %s not in %s (it maps %s)" % (
            what, format_list(missing), name, format_list(mapping) or "nothing"))
    return frozenset(mapping[i] for i in ids)


def _levels_between(base, path):
    """The directories strictly between BASE and PATH, top-down ([] when PATH
    is not below BASE)."""
    rel = os.path.relpath(path, base)
    if rel == "." or rel.startswith(".."):
        return []
    parts = rel.split(os.sep)[:-1]
    return [os.path.join(base, *parts[:i + 1]) for i in range(len(parts))]


def _failure(err, file, value, owner):
    """Vanished when OWNER (the container's directory) is gone, else WriteError."""
    if not os.path.isdir(owner):
        return Vanished(owner)
    return WriteError(file, value, errno.errorcode.get(err.errno, str(err.errno)))
