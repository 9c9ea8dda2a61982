"""Build explain and plan reports (plain data; the CLI prints them)."""
from collections.abc import Iterable, Sequence
from typing import Any

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.numa import affinity as affmod
from tacker_hwaffinity.numa.cgroups import container_cgroup_dir
from tacker_hwaffinity.numa.cpuset import format_list
from tacker_hwaffinity.numa.config import PlacementConfig
from tacker_hwaffinity.numa.placement import Placer
from tacker_hwaffinity.numa.subjects import Pod
from tacker_hwaffinity.numa.topology import Machine


BAD_ANNOTATION = "bad annotation: "


def _affinities_by_pod(pods):
    """{pod: ({container name: [Affinity]}, error string or None)}."""
    out = {}
    for pod in pods:
        try:
            out[pod] = (affmod.pod_affinities(pod), None)
        except InputError as e:
            out[pod] = ({}, str(e))
    return out


def unknown_container_warnings(pod, affs):
    names = {c.name for c in pod.containers}
    return ["%s: Pod %s: affinities for container %r, which the pod does not have (ignored, "
            "as upstream)" % (pod.source, pod.ref, n) for n in affs if n not in names]


def explain(pods: Sequence[Pod], cluster_pods: Iterable[Pod] = (), colocate_pods: bool = False,
            colocate_namespaces: bool = False
            ) -> tuple[dict[str, Any], dict[tuple[str, str], list[str]], list[str]]:
    """Report for each container of PODS: affinities, effective affinity, errors.

    Returns (report, sources, warnings): the report has exactly the documented
    JSON shape; SOURCES maps (pod, container) to the annotation key of each
    affinity (for the text form); WARNINGS are for stderr.
    """
    known = list(pods) + [p for p in cluster_pods if p.ref not in {q.ref for q in pods}]
    everyone = [c for p in known for c in p.containers]
    report: dict[str, Any] = {"containers": []}
    sources: dict[tuple[str, str], list[str]] = {}
    warnings: list[str] = []
    for pod, (affs, error) in _affinities_by_pod(pods).items():
        warnings.extend(unknown_container_warnings(pod, affs))
        for c in pod.containers:
            entry = {"pod": pod.ref, "container": c.name, "affinities": [], "effective": [],
                     "errors": [error] if error else []}
            if not error:
                mine = affs.get(c.name, [])
                mine = mine + affmod.implicit_affinities(c, bool(mine), colocate_pods,
                                                         colocate_namespaces)
                entry["affinities"] = [a.to_dict() for a in mine]
                sources[(pod.ref, c.name)] = [a.source for a in mine]
                eff = affmod.evaluate(mine, c, everyone)
                entry["effective"] = [{"pod": c2.pod.ref, "container": c2.name, "weight": w}
                                      for c2, w in eff.items()]
            report["containers"].append(entry)
    return report, sources, warnings


def plan(machine: Machine, pods: Iterable[Pod], existing: Iterable[Pod] = (),
         cgroup_driver: str = "systemd", config: PlacementConfig = PlacementConfig()
         ) -> tuple[dict[str, Any], Placer]:
    """Place the containers of EXISTING (replay) then PODS, in order, with CONFIG (a
    ``numa.config.PlacementConfig``, the agent's too); return (report, placer)."""
    placer = config.placer(machine)
    warnings = []
    order = [(p, True) for p in existing] + [(p, False) for p in pods]
    parsed = _affinities_by_pod([p for p, _ in order])
    for pod, replayed in order:
        affs, error = parsed[pod]
        warnings.extend(unknown_container_warnings(pod, affs))
        for c in pod.containers:
            if error:
                placer.record(_failed(c, BAD_ANNOTATION + error, replayed))
                continue
            placer.set_affinities(c, affs.get(c.name, []))
            try:
                placer.place(c, replayed)
            except InputError as e:
                placer.record(_failed(c, BAD_ANNOTATION + str(e), replayed))
    return plan_report(placer, warnings, cgroup_driver), placer


def _failed(container, message, replayed):
    from tacker_hwaffinity.numa.placement import Decision
    return Decision(container, error=message, replayed=replayed)


def plan_report(placer, warnings=(), cgroup_driver="systemd"):
    m = placer.machine
    rep = {"machine": {"name": m.name, "sockets": len(m.sockets()),
                       "numaNodes": len(m.cpu_nodes()), "cpus": len(m.cpus),
                       "online": format_list(m.online), "isolated": format_list(m.isolated),
                       "reserved": format_list(m.reserved)},
           "pools": [{"id": p.id, "name": p.name, "kind": p.kind, "depth": p.depth,
                      "parent": p.parent.name if p.parent else None,
                      "cpus": format_list(p.cpus), "memoryNodes": format_list(p.mem_nodes)}
                     for p in placer.pools],
           "containers": [], "warnings": list(warnings)}
    for d in placer.decisions:
        c = d.container
        e = {"pod": c.pod.ref, "container": c.name, "replayed": d.replayed,
             "request": d.request.to_dict() if d.request else None,
             "pool": None, "cpus": None, "exclusiveCpus": None, "mems": None,
             "poolAffinity": {placer.pools[k].name: v for k, v in sorted(d.pool_affinity.items())},
             "scores": [s.to_dict() for s in sorted(d.scores, key=lambda s: (s.rank is None,
                                                                              s.rank or 0))],
             "cgroup": container_cgroup_dir(c, cgroup_driver), "error": d.error}
        if d.grant:
            g = d.grant
            e.update(pool=g.pool.name, cpus=format_list(placer.cpuset(g)),
                     exclusiveCpus=format_list(g.exclusive), mems=format_list(placer.memset(g)))
        rep["containers"].append(e)
    return rep
