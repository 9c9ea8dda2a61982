"""InterPodAffinity: required terms filter, preferred terms and symmetry score."""
import numpy as np

from tacker_hwaffinity.scheduling.plugins import Rejection

NAME = "InterPodAffinity"
ERR_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_ANTI = "node(s) didn't match pod anti-affinity rules"
ERR_EXISTING_ANTI = "node(s) didn't satisfy existing pods anti-affinity rules"
_REASONS = ((), (ERR_AFFINITY,), (ERR_ANTI,), (ERR_EXISTING_ANTI,))


def _matches_all(terms):
    """Matcher for a bound pod that satisfies every one of TERMS (resolved incoming terms)."""
    def match(pod, _ns_labels):
        return all(t.matches(pod.namespace, pod.labels, None) for t in terms)
    return match


def _matches_one(term):
    def match(pod, _ns_labels):
        return term.matches(pod.namespace, pod.labels, None)
    return match


class InterPodAffinity:
    name = NAME

    def __init__(self, hard_pod_affinity_weight=1, ignore_preferred_terms_of_existing_pods=False):
        self.hard_weight = hard_pod_affinity_weight
        self.ignore_existing_preferred = ignore_preferred_terms_of_existing_pods

    @staticmethod
    def incoming_terms(cycle, kind):
        key = ("ipa-terms", kind)
        got = cycle.cache.get(key)
        if got is None:
            got = cycle.cache[key] = tuple(cycle.state.resolve_namespaces(t)
                                           for t in cycle.pod.terms[kind])
        return got

    def filter(self, cycle):
        return self._filter(cycle, existing=True)

    def filter_own(self, cycle):
        """The filter without the existing pods' terms (code 3): only whether the
        incoming pod's own required terms hold; ``hwaffinity audit`` judges intent so."""
        return self._filter(cycle, existing=False)

    def _filter(self, cycle, existing):
        state, pod = cycle.state, cycle.pod
        n = len(state.nodes)
        code = np.zeros(n, dtype=np.int8)
        # 3. existing pods' required anti-affinity that selects this pod
        if existing:
            ns_labels = state.ns_labels(pod.namespace)
            per_key = {}
            for g in state.groups_selecting("required_anti", pod, ns_labels):
                if g.total:
                    acc = per_key.get(g.domains.key)
                    per_key[g.domains.key] = g.counts.copy() if acc is None else acc + g.counts
            for key, counts in per_key.items():
                code[state.domains(key).spread(counts > 0)] = 3
        # 2. incoming required anti-affinity
        for t in self.incoming_terms(cycle, "required_anti"):
            c = state.counts(("one", t.sig), _matches_one(t), t.topology_key)
            if c.total:
                code[c.domains.spread(c.counts > 0)] = 2
        # 1. incoming required affinity
        affinity = self.incoming_terms(cycle, "required_affinity")
        if affinity:
            sig = ("all", tuple(t.sig for t in affinity))
            matcher = _matches_all(affinity)
            have_keys = np.ones(n, dtype=bool)
            satisfied = np.ones(n, dtype=bool)
            empty = True
            for t in affinity:
                c = state.counts(sig, matcher, t.topology_key)
                have_keys &= c.domains.present
                satisfied &= c.domains.spread(c.counts > 0)
                empty = empty and c.total == 0
            if empty and matcher(pod, None):
                satisfied = have_keys  # first pod of a group with affinity to itself
            code[~(have_keys & satisfied)] = 1
        failed = code > 0
        if not failed.any():
            return None
        return Rejection(failed, codes=code, table=_REASONS)

    def scores(self, cycle, feasible):
        raw = self.score(cycle)
        return self.normalize(raw, feasible) if raw.any() else cycle.state.zeros

    def score(self, cycle):
        state, pod = cycle.state, cycle.pod
        pref_aff = self.incoming_terms(cycle, "preferred_affinity")
        pref_anti = self.incoming_terms(cycle, "preferred_anti")
        has_constraints = bool(pref_aff or pref_anti)
        raw = np.zeros(len(state.nodes), dtype=np.int64)
        if self.ignore_existing_preferred and not has_constraints:
            return raw
        per_key = {}

        def add(domains, counts):
            acc = per_key.get(domains.key)
            per_key[domains.key] = counts if acc is None else acc + counts

        for terms, sign in ((pref_aff, 1), (pref_anti, -1)):
            for t in terms:
                c = state.counts(("one", t.sig), _matches_one(t), t.topology_key)
                if c.total:
                    add(c.domains, sign * t.weight * c.counts)
        ns_labels = state.ns_labels(pod.namespace)
        existing = [("preferred_affinity", 1), ("preferred_anti", -1)]
        if self.hard_weight > 0:
            existing.append(("required_affinity", 1))
        for kind, sign in existing:
            for g in state.groups(kind):
                if g.total and g.matches(pod, ns_labels):
                    w = self.hard_weight if kind == "required_affinity" else g.term.weight
                    add(g.domains, sign * w * g.counts)
        for key, counts in per_key.items():
            raw += state.domains(key).spread(counts)
        return raw

    @staticmethod
    def normalize(raw, feasible):
        """Min-max over the scored nodes, float64 then truncated (upstream NormalizeScore)."""
        out = np.zeros_like(raw)
        if not feasible.any():
            return out
        s = raw[feasible]
        lo, hi = int(s.min()), int(s.max())
        if hi > lo:
            f = 100.0 * ((s - lo).astype(np.float64) / float(hi - lo))
            out[feasible] = np.trunc(f).astype(np.int64)
        return out
