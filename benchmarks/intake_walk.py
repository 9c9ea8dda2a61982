"""The call walk of ``hwaffinity plan`` from ``cli.main.main`` until the planner starts.

Traces every call into a ``tacker_hwaffinity`` function (``sys.setprofile``) while
``hwaffinity plan --cluster samples/cluster.yaml -f samples/cnf/upf-required.yaml``
runs in this process, from ``cli.main.main`` until ``scheduling.planner.plan`` is
called, and prints three figures of the path an input takes through the modules:

* rooms: the distinct modules a call entered;
* returns: walk steps into a module that an earlier step entered and that has been
  left since (it is not on the call stack below the caller);
* climbs back up: walk steps that our code makes (the calling frame is ours) from a
  module of a lower layer into one of a higher layer (layers below), or into a module
  that is still on the call stack below the caller (a callback or re-entry). Such
  steps that a library makes (argparse building a parser of the class it was given)
  are counted apart, as "through a library".

A walk step is a call from a function of module C into a function of module M != C
(C: the module of the nearest ``tacker_hwaffinity`` frame below, so a callback
that a library makes counts from the module that handed it over). Each (C, M) pair
is counted once, at its first call: a loop over the objects walks the same doors
again, not new ones. Module bodies run by a lazy import are not steps.

Layers, lowest first (doc/design.md): 0 objects and the shared leaf modules; 1 the
pure cores (scheduling, numa, labeling); 2 the adapters (intake, kube, csar, audit,
...); 3 cli.

    python benchmarks/intake_walk.py [-v]
"""
import argparse
import contextlib
import io
import os
import sys

from tacker_hwaffinity.cli import main as cli_main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "tacker_hwaffinity"
COMMAND = ["plan", "--cluster", os.path.join(ROOT, "samples", "cluster.yaml"),
           "-f", os.path.join(ROOT, "samples", "cnf", "upf-required.yaml")]
PLANNER_START = ("tacker_hwaffinity.scheduling.planner", "plan")
CORES = ("scheduling", "numa", "labeling")
ADAPTERS = ("intake", "kube", "csar", "audit", "openstack", "ssh", "translator", "webhook",
            "agent", "controller", "mgmt", "nri", "mgmt_driver", "mgmt_v2")


def layer(module):
    """The layer of MODULE (a tacker_hwaffinity module name): 0 to 3, as above."""
    part = module.split(".")[1] if "." in module else ""
    if part == "cli":
        return 3
    if part in ADAPTERS:
        return 2
    if part in CORES:
        return 1
    return 0


def _ours(frame):
    return frame.f_globals.get("__name__", "").partition(".")[0] == PACKAGE


class Walk:
    """The walk steps of one traced run, and the figures over them."""

    def __init__(self):
        self.rooms = []          # modules, in the order first entered
        self.returns = []        # "caller -> callee.function"
        self.climbs = []         # ("caller -> callee.function", why)
        self.by_library = []     # the same, of a call a library made (argparse, ...)
        self.edges = set()
        self.done = False

    def profile(self, frame, event, _arg):
        if self.done or event != "call" or not _ours(frame):
            return
        callee = frame.f_globals["__name__"]
        if (callee, frame.f_code.co_name) == PLANNER_START:
            self.done = True
            return
        below = []               # our frames under this call, innermost first
        back = frame.f_back
        while back is not None:
            if _ours(back):
                below.append(back)
            back = back.f_back
        if any(f.f_code.co_name == "<module>" for f in below + [frame]):
            return               # an import running a module's body
        if not below:
            self.rooms.append(callee)  # main itself
            return
        self.step(below, callee, frame.f_code.co_name, frame.f_back is not below[0])

    def step(self, below, callee, function, by_library):
        caller = below[0].f_globals["__name__"]
        if caller == callee or (caller, callee) in self.edges:
            return
        self.edges.add((caller, callee))
        stack = {f.f_globals["__name__"] for f in below[1:]}
        where = "%s -> %s.%s" % (caller, callee, function)
        if callee in self.rooms and callee not in stack:
            self.returns.append(where)
        climbs = self.by_library if by_library else self.climbs
        if callee in stack:
            climbs.append((where, "re-entry: on the stack below"))
        elif layer(callee) > layer(caller):
            climbs.append((where, "layer %d to %d" % (layer(caller), layer(callee))))
        if callee not in self.rooms:
            self.rooms.append(callee)


def trace():
    """The Walk of COMMAND, and its exit status."""
    walk = Walk()
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        sys.setprofile(walk.profile)
        try:
            status = cli_main.main(COMMAND)
        finally:
            sys.setprofile(None)
    if not walk.done:
        raise SystemExit("the planner never started (exit %s)" % status)
    return walk, status


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("-v", "--verbose", action="store_true",
                    help="list the rooms, the returns and the climbs")
    args = ap.parse_args(argv)
    walk, status = trace()
    print("hwaffinity %s (exit %d), cli.main.main to the planner:" % (" ".join(
        os.path.relpath(a, ROOT) if os.path.isabs(a) else a for a in COMMAND), status))
    print("rooms %d  returns %d  climbs back up %d  (through a library: %d)"
          % (len(walk.rooms), len(walk.returns), len(walk.climbs), len(walk.by_library)))
    if args.verbose:
        print("rooms: " + " ".join(m.replace(PACKAGE + ".", "") for m in walk.rooms))
        for where in walk.returns:
            print("return: %s" % where)
    for where, why in walk.climbs:
        print("climb: %s (%s)" % (where, why))
    for where, why in walk.by_library:
        print("climb through a library: %s (%s)" % (where, why))
    return 0


if __name__ == "__main__":
    sys.exit(main())
