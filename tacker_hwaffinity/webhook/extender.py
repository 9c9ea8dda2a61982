"""The scheduler extender's filter and prioritize verbs, over a :class:`PodCache`.

The pod terms the API server rejects in ``spec.affinity`` (carried by the annotations
``hwaffinity.io/pod-affinity`` and ``hwaffinity.io/required-during-execution``) are
judged by the engine's one evaluator (``scheduling.plugins.interpod``) over the
cache's index. Wire format, errors, the 0..10 score and where this differs from the
engine: ``doc/webhook.md``.

What the extender reads of its cache and what it asks of it are the Protocols
``CacheReads`` (served by ``podcache.PodCacheView``: each read takes the cache's lock
itself, for one selection) and ``ExtenderCache`` (``podcache.PodCache``). Its verbs
answer typed bodies (``FilterResult``, ``HostPriority``); ``handle`` encodes each once,
at the edge, into the one answer type of the handlers, ``answer.Answer`` (JSON bytes).
"""
import itertools
import json
import logging
import time
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, TypedDict

import numpy as np

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.objects import jsondepth
from tacker_hwaffinity.objects.jsontypes import JsonObject, ReadOnlyJson
from tacker_hwaffinity.scheduling.arrays import BoolArray, CodeArray, IntArray
from tacker_hwaffinity.scheduling.nodetable import NodeTable
from tacker_hwaffinity.scheduling.plugins import interpod
from tacker_hwaffinity.scheduling.resources import MAX_NODE_SCORE
from tacker_hwaffinity.scheduling.terms import AffinityTerm
from tacker_hwaffinity.webhook import answer
from tacker_hwaffinity.webhook.answer import Answer
from tacker_hwaffinity.webhook.podcache import (SCORE, PerNode, PodRecord, ResolvedTerms,
                                                SelectingGroups)

LOG = logging.getLogger(__name__)

ERR_UNKNOWN_NODE = "node(s) unknown to the hwaffinity extender (cache not synced?)"
# An extended pod whose required anti-affinity selects pods that kube-scheduler places
# without the extender's filter (no filter mark) is placed after them
# (PodCache.unmarked_pending).
ERR_UNMARKED_PENDING = ("waiting for %d pending pod(s) its anti-affinity selects, which are "
                        "placed without the hwaffinity extender's filter, to be placed "
                        "first (%s)")
MAX_EXTENDER_PRIORITY = 10
# the evaluator's filter codes (interpod.REASONS), and one of the extender's own
UNKNOWN_NODE = len(interpod.REASONS)
_REASONS = tuple(r[0] if r else "" for r in interpod.REASONS) + (ERR_UNKNOWN_NODE,)


class ArgsError(ValueError):
    """ExtenderArgs that are not what kube-scheduler sends."""


# kube-scheduler's ExtenderFilterResult: the nodes that pass, in the form they came in
# (Nodes, a NodeList, or NodeNames; the other None), the failed ones with their reason,
# and an error that fails the pod. (Go's field names: the keys are data, not attributes.)
FilterResult = TypedDict("FilterResult", {
    "Nodes": JsonObject | None, "NodeNames": list[str] | None,
    "FailedNodes": dict[str, str], "Error": str})
# One entry of kube-scheduler's HostPriorityList.
HostPriority = TypedDict("HostPriority", {"Host": str, "Score": int})


class CacheReads(Protocol):
    """What the extender reads of its pod cache (``podcache.PodCacheView``); each call
    takes the cache's lock for one selection at most."""

    def describe_pod(self, obj: ReadOnlyJson, strict: bool = ...) -> PodRecord: ...

    def node_table(self) -> NodeTable: ...

    def select(self, terms: Iterable[AffinityTerm]) -> PerNode: ...

    def selecting(self, kind: str, pod: PodRecord) -> SelectingGroups: ...

    def selects_pod(self, terms: Iterable[AffinityTerm], rec: PodRecord) -> bool: ...

    def selected_by(self, kinds: Iterable[str], pod: PodRecord,
                    deadline: float | None = ...) -> bool: ...


class ExtenderCache(Protocol):
    """What the extender asks of its pod cache (``podcache.PodCache``): its read view,
    and the pending pods (``webhook/assumed.py``) it records and waits for."""

    def reader(self) -> CacheReads: ...

    def assume(self, pod: PodRecord) -> None: ...

    def wait_for_pending(self, pod: PodRecord, terms: ResolvedTerms | None = ...,
                         timeout: float = ...) -> int: ...

    def unmarked_pending(self, rec: PodRecord, terms: Sequence[AffinityTerm],
                         timeout: float = ...) -> list[str]: ...


def _pod_of(args: object) -> JsonObject:
    if not isinstance(args, dict):
        raise ArgsError("ExtenderArgs must be a JSON object")
    pod = args.get("Pod")
    if not isinstance(pod, dict) or not isinstance(pod.get("metadata"), dict):
        raise ArgsError("ExtenderArgs has no Pod (an object with metadata)")
    return pod


def _names_of(args: JsonObject) -> tuple[list[str], JsonObject | None]:
    """(node names, NodeList or None): the NodeNames form when given, else Nodes."""
    names = args.get("NodeNames")
    if names is not None:
        if type(names) is not _NodeNames and (
                not isinstance(names, list) or not set(map(type, names)) <= {str}):
            raise ArgsError("NodeNames must be a list of node names")
        return names, None
    nodes = args.get("Nodes")
    if nodes is None:
        return [], None
    items = nodes.get("items") if isinstance(nodes, dict) else None
    if items is None and isinstance(nodes, dict):
        items = []
    if not isinstance(items, list):
        raise ArgsError("Nodes must be a NodeList (an object with items)")
    out = []
    for i, item in enumerate(items):
        meta = item.get("metadata") if isinstance(item, dict) else None
        name = meta.get("name") if isinstance(meta, dict) else None
        if not isinstance(name, str):
            raise ArgsError("Nodes.items[%d] has no metadata.name" % i)
        out.append(name)
    return out, nodes


class _NodeNames(list[str]):
    """A NodeNames list already found to be plain strings (see _plain)."""

    __slots__ = ()


class _LastNodes:
    """The last list of node names a verb was asked about (kube-scheduler sends the same
    list pod after pod, or, with percentageOfNodesToScore below 100, a window of it that
    moves pod after pod), kept by one Extender: the bytes of the NodeNames array it came
    in and the list they decode to (one list object, request after request), their
    positions in the node table, and the filter's pass-through answer (the array's bytes
    again). Each field is one tuple, replaced whole."""

    __slots__ = ("_body", "_array", "_index", "_passed", "_hosts")

    def __init__(self) -> None:
        # (the last body, the ExtenderArgs it gave)
        self._body: tuple[bytes | None, Any] = (None, None)
        # (b'["NAME",...]', the list it decodes to)
        self._array: tuple[bytes | None, Any] = (None, None)
        # (node table, names, positions; -1: unknown)
        self._index: tuple[NodeTable | None, Sequence[str] | None, IntArray] = (
            None, None, _NO_POSITIONS)
        # (names, the filter's pass-through answer)
        self._passed: tuple[Sequence[str] | None, bytes | None] = (None, None)
        # (names, each one's '{"Host":"NAME","Score":')
        self._hosts: tuple[Sequence[str] | None, list[str]] = (None, [])

    def args(self, body: bytes) -> Any:
        """The ExtenderArgs in BODY (bytes, its nesting checked), as ``json.loads``
        gives them, with the NodeNames array decoded on its own (and not at all when its
        bytes are the last request's). Go's encoder writes NodeNames last:
        ``{"Pod":{...},"Nodes":null,"NodeNames":["n1",...]}``. ``,"`` cannot occur
        inside a JSON string, so the last ``,"NodeNames":[`` is a key; when the bytes
        before it and a ``}`` are an object with members and the bytes after it up to
        the final ``}`` are an array, BODY is that object with NodeNames set last (as
        ``json.loads`` keeps the last of a repeated key). Anything else is decoded
        whole. A body equal to the last one (kube-scheduler sends the same arguments to
        /filter and /prioritize) gives the same arguments again: the verbs only read
        them."""
        last, args = self._body
        if body == last:
            return args
        args = self._decode(body)
        if len(body) <= _KEPT_BODY:
            self._body = (body, args)
        return args

    def _decode(self, body: bytes) -> Any:
        at = body.rfind(_NAMES_KEY)
        if at > 0 and body[-1:] == b"}":
            array = body[at + len(_NAMES_KEY) - 1:-1]
            known, names = self._array
            try:
                head = json.loads(body[:at] + b"}")
                if array != known:
                    names = json.loads(array)
            except ValueError:      # not the top level's key, or not JSON: decoded whole
                head = None
            if isinstance(head, dict) and head and isinstance(names, list):
                if array != known and _plain(names):
                    names = _NodeNames(names)
                    self._array = (array, names)
                head["NodeNames"] = names
                return head
        return json.loads(body)

    def index(self, table: NodeTable, names: Sequence[str]) -> IntArray:
        """The position of each of NAMES in the node table TABLE (-1: not in it)."""
        last_table, last_names, idx = self._index
        if last_table is not table or (last_names is not names and last_names != names):
            idx = np.fromiter(map(table.index.get, names, itertools.repeat(-1)),
                              dtype=np.int64, count=len(names))
            self._index = (table, names, idx)
        return idx

    def host_prefixes(self, names: Sequence[str]) -> list[str]:
        """Per node of NAMES (plain: see _plain), the start of its HostPriority's JSON,
        ``{"Host":"NAME","Score":``; made once per node list."""
        last_names, prefixes = self._hosts
        if last_names is not names:
            prefixes = ['{"Host":"%s","Score":' % n for n in names]
            self._hosts = (names, prefixes)
        return prefixes

    def passed(self, names: Sequence[str]) -> bytes | None:
        """The filter's pass-through answer for NAMES (JSON bytes), or None unless NAMES
        is the list of the last NodeNames array: its bytes are the answer's."""
        last_names, answer = self._passed
        if last_names is names:
            return answer
        array, known = self._array
        if known is not names:
            return None
        answer = b'{"Nodes":null,"NodeNames":%s,"FailedNodes":{},"Error":""}' % array
        self._passed = (names, answer)
        return answer


class _Nodes:
    """The request's nodes mapped onto the cache's node table, when first asked (a score
    that no term moves needs no node's position)."""

    __slots__ = ("table", "_names", "_last", "_idx", "_known", "_ids")

    def __init__(self, table: NodeTable, names: Sequence[str], last: _LastNodes) -> None:
        self.table = table
        self._names, self._last = names, last
        self._idx: IntArray | None = None
        self._known: BoolArray = _NONE_KNOWN
        self._ids: dict[str, IntArray] = {}

    def _positions(self) -> IntArray:
        if self._idx is None:
            idx = self._last.index(self.table, self._names)
            self._known = idx >= 0
            self._idx = np.where(self._known, idx, 0)
        return self._idx

    @property
    def known(self) -> BoolArray:
        """Per requested node, whether the cache knows it."""
        self._positions()
        return self._known

    def ids(self, key: str) -> IntArray:
        """Domain id of each requested node for topology KEY (-1: no such label)."""
        got = self._ids.get(key)
        if got is None:
            got = self._ids[key] = self.table.domains(key).ids[self._positions()]
        return got

    def counts(self, key: str, per_node: PerNode) -> IntArray:
        """Per domain of KEY, the sum of PER_NODE {node name: count} (cluster-wide)."""
        d = self.table.domains(key)
        if not per_node:
            return np.zeros(len(d), dtype=np.int64)
        n = len(per_node)
        where = np.fromiter(map(self.table.index.get, per_node, itertools.repeat(-1)),
                            dtype=np.int64, count=n)
        weights = np.fromiter(per_node.values(), dtype=np.int64, count=n)
        domain = np.where(where >= 0, d.ids[np.maximum(where, 0)], -1)
        keep = domain >= 0
        return np.bincount(domain[keep], weights=weights[keep],
                           minlength=len(d)).astype(np.int64)


class _View:
    """The evaluator's counts interface (serves ``scheduling.counts.CountsView``) over
    the cache's read view READS, for the pod REC and the requested nodes NAMES (LAST: the
    extender's _LastNodes). Each read of READS takes the cache's lock for one selection,
    and this counts outside it, so that no decision holds the lock for all its terms
    (``podcache``)."""

    __slots__ = ("reads", "rec", "nodes", "size", "_selected")

    def __init__(self, reads: CacheReads, rec: PodRecord, names: Sequence[str],
                 last: _LastNodes) -> None:
        self.reads, self.rec = reads, rec
        self.nodes = _Nodes(reads.node_table(), names, last)
        self.size = len(names)
        self._selected: dict[tuple[object, ...], PerNode] = {}

    def domain_ids(self, key: str) -> IntArray:
        return self.nodes.ids(key)

    def matching_counts(self, terms: Sequence[AffinityTerm], key: str) -> IntArray:
        sig = tuple(t.sig for t in terms)
        per_node = self._selected.get(sig)
        if per_node is None:
            per_node = self._selected[sig] = self.reads.select(terms)
        return self.nodes.counts(key, per_node)

    def selecting_groups(self, kind: str) -> list[tuple[AffinityTerm, IntArray]]:
        return [(term, self.nodes.counts(term.topology_key, per_node))
                for term, per_node in self.reads.selecting(kind, self.rec)]

    def selects_itself(self, terms: Sequence[AffinityTerm]) -> bool:
        return self.reads.selects_pod(terms, self.rec)


class Extender:
    """filter / prioritize over CACHE. PENDING_WAIT: seconds the filter waits for
    relevant pending pods (``PodCache.wait_for_pending``)."""

    def __init__(self, cache: ExtenderCache, hard_pod_affinity_weight: int = 1,
                 pending_wait: float = 2.0) -> None:
        self.cache = cache
        self.reads = cache.reader()
        self.hard_weight = hard_pod_affinity_weight
        self.pending_wait = pending_wait
        self._last = _LastNodes()

    # -- filter ------------------------------------------------------------------
    def filter(self, args: JsonObject) -> FilterResult:
        """ExtenderFilterResult for ExtenderArgs ARGS (a dict)."""
        try:
            pod = _pod_of(args)
            names, nodelist = _names_of(args)
        except ArgsError as e:
            return {"Nodes": None, "NodeNames": None, "FailedNodes": {}, "Error": str(e)}
        cache = self.cache
        try:
            rec = self.reads.describe_pod(pod, strict=True)
        except InputError as e:  # the engine's message, naming the annotation and field
            return {"Nodes": None, "NodeNames": None, "FailedNodes": {}, "Error": str(e)}
        repelled = self.reads.selected_by(("required_anti",), rec)
        if rec.ann == (None, None) and not repelled:
            cache.assume(rec)
            return _passed(args)
        terms: ResolvedTerms = rec.terms or {}
        start = time.monotonic()
        left = cache.wait_for_pending(rec, terms, self.pending_wait)
        if left:
            LOG.info("pod %s: %d relevant pod(s) still pending after %.1fs; deciding without "
                     "them", rec.key, left, self.pending_wait)
        if not (repelled or terms.get("required_affinity") or terms.get("required_anti")):
            cache.assume(rec)           # preferred terms only: the score's, every node passes
            return _passed(args)
        if terms.get("required_affinity"):     # the pods it needs, placed without the
            cache.unmarked_pending(                # extender: their bindings first, as for
                rec, terms["required_affinity"],   # the pods it let through (above)
                self.pending_wait - (time.monotonic() - start))
        unmarked = cache.unmarked_pending(rec, terms.get("required_anti", ()),
                                          self.pending_wait - (time.monotonic() - start))
        if unmarked:
            return _all_failed(names, nodelist, ERR_UNMARKED_PENDING % (
                len(unmarked), ", ".join(sorted(unmarked)[:3])))
        codes = self._codes(rec, terms, names).tolist()
        failed = {n: _REASONS[c] for n, c in zip(names, codes) if c}
        if len(failed) < len(names):
            cache.assume(rec)
        if nodelist is not None:
            items = nodelist.get("items") or []
            out_nodes = dict(nodelist, items=[x for x, c in zip(items, codes) if not c])
            return {"Nodes": out_nodes, "NodeNames": None, "FailedNodes": failed, "Error": ""}
        return {"Nodes": None, "NodeNames": [n for n, c in zip(names, codes) if not c],
                "FailedNodes": failed, "Error": ""}

    def _codes(self, rec: PodRecord, terms: ResolvedTerms, names: Sequence[str]) -> CodeArray:
        """Per requested node, an index into _REASONS (0: passes)."""
        view = _View(self.reads, rec, names, self._last)
        code = interpod.filter_codes(view, terms.get("required_affinity", ()),
                                     terms.get("required_anti", ()))
        code[~view.nodes.known] = UNKNOWN_NODE
        return code

    # -- prioritize --------------------------------------------------------------
    def prioritize(self, args: JsonObject) -> list[HostPriority]:
        """HostPriorityList for ExtenderArgs ARGS: a score in 0..10 per given node.
        ArgsError for arguments kube-scheduler would not send."""
        names, scores = self.priorities(args)
        return [{"Host": n, "Score": s} for n, s in zip(names, scores)]

    def priorities(self, args: JsonObject) -> tuple[list[str], list[int]]:
        """(node names, their scores 0..10) for ExtenderArgs ARGS (see prioritize).

        A pod that kube-scheduler does not send to the filter (marked for /prioritize
        alone: preferred terms, or selected by other pods' scoring terms) gets here what
        the filter gives the others: the wait for the relevant pods let through just
        before (``PodCache.wait_for_pending``), and being taken as placed once scored
        (``PodCache.assume``), so that the pods after it see it."""
        pod = _pod_of(args)
        names, _nodelist = _names_of(args)
        cache = self.cache
        try:
            rec: PodRecord | None = self.reads.describe_pod(pod, strict=True)
        except InputError:
            rec = None  # the filter refused it already: nothing to add
        scores = None
        if rec is not None:
            existing = [k for k, _sign in interpod.existing_score_kinds(self.hard_weight)]
            terms: ResolvedTerms = rec.terms or {}
            unfiltered = rec.verbs == {SCORE}   # (unmarked: every pod reaches both verbs)
            if unfiltered and terms:
                left = cache.wait_for_pending(rec, terms, self.pending_wait)
                if left:
                    LOG.info("pod %s: %d relevant pod(s) still pending after %.1fs; "
                             "scoring without them", rec.key, left, self.pending_wait)
            if terms.get("preferred_affinity") or terms.get("preferred_anti") \
                    or self.reads.selected_by(existing, rec):
                scores = self._scores(rec, terms, names)
            if unfiltered:
                cache.assume(rec)
        if scores is None:
            return names, [0] * len(names)
        return names, scores.tolist()

    def _scores(self, rec: PodRecord, terms: ResolvedTerms,
                names: Sequence[str]) -> IntArray | None:
        view = _View(self.reads, rec, names, self._last)
        raw = interpod.raw_scores(view, terms.get("preferred_affinity", ()),
                                  terms.get("preferred_anti", ()), self.hard_weight)
        if not raw.any():           # no term selects a pod: every node scores 0
            return None
        known = view.nodes.known
        raw[~known] = 0
        step = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY    # kube-scheduler multiplies back
        return (interpod.normalize(raw, known) + step // 2) // step     # rounded half up

    # -- HTTP body in, body out --------------------------------------------------
    def handle(self, verb: str, body: bytes | str) -> Answer:
        """The ``webhook.answer.Answer`` (HTTP status, JSON response bytes, outcome) for
        VERB ("filter"/"prioritize") and the request BODY (bytes). Never raises."""
        depth = jsondepth.nesting(body) if isinstance(body, bytes) else None
        if depth is not None:
            return _error(400, "request body nests %d levels deep, over the limit of %d"
                          % (depth, jsondepth.MAX_DEPTH))
        try:
            args = self._last.args(body) if isinstance(body, bytes) else json.loads(body)
        except (ValueError, UnicodeDecodeError, TypeError, RecursionError) as e:
            return _error(400, "request body is not JSON: %s" % e)
        try:
            if verb == "filter":
                result = self.filter(args)
            elif verb == "prioritize":
                return Answer(200, self._priorities_json(*self.priorities(args)),
                              answer.ANSWERED)
            else:
                return _error(404, "unknown verb %r (expected filter or prioritize)" % (verb,))
        except ArgsError as e:
            return _error(400, str(e))
        except Exception as e:  # a bug: answer, log the traceback, count it
            LOG.exception("extender %s failed", verb)
            return _error(500, "internal error in the hwaffinity extender: %s: %s"
                          % (type(e).__name__, e))
        return Answer(200, self._filter_json(result),
                      answer.ERROR if result["Error"] else answer.ANSWERED)

    def _filter_json(self, result: FilterResult) -> bytes:
        """The ExtenderFilterResult's JSON: the pass-through answer for the last node list
        as kept bytes; a list of plain node names joined directly (json.dumps takes
        0.4 ms over 5000 names)."""
        names = result["NodeNames"]
        if names is None:
            return _json(result)
        if result["Nodes"] is None and not result["FailedNodes"] and result["Error"] == "":
            kept = self._last.passed(names)
            if kept is not None:
                return kept
        if not _plain(names):
            return _json(result)
        return b'{"Nodes":%s,"NodeNames":%s,"FailedNodes":%s,"Error":%s}' % (
            _json(result["Nodes"]), _names_json(names), _json(result["FailedNodes"]),
            _json(result["Error"]))

    def _priorities_json(self, names: Sequence[str], scores: Sequence[int]) -> bytes:
        """The HostPriorityList's JSON: the nodes that score above 0, and no other.
        kube-scheduler adds the score of each node listed and nothing for a node left
        out, so this is the full list's meaning, at a fraction of its bytes (a pod
        that scores every node 0 gets ``[]``, not one entry per node to write, send and
        decode in kube-scheduler). Plain names are joined from their entries' starts,
        made once per node list (``_LastNodes.host_prefixes``), and the score's text."""
        if not any(scores):
            return b"[]"
        hits = [i for i, score in enumerate(scores) if score]
        if type(names) is not _NodeNames and not _plain(names):
            return _json([{"Host": names[i], "Score": scores[i]} for i in hits])
        prefixes = self._last.host_prefixes(names)
        return ("[%s]" % ",".join([prefixes[i] + _SCORE_TEXT[scores[i]] for i in hits])
                ).encode("ascii")


def _passed(args: JsonObject) -> FilterResult:
    """The ExtenderFilterResult that passes every node of ExtenderArgs ARGS."""
    return {"Nodes": args.get("Nodes"), "NodeNames": args.get("NodeNames"),
            "FailedNodes": {}, "Error": ""}


def _all_failed(names: Sequence[str], nodelist: JsonObject | None,
                reason: str) -> FilterResult:
    """An ExtenderFilterResult that fails every requested node with REASON."""
    failed = dict.fromkeys(names, reason)
    if nodelist is not None:
        return {"Nodes": dict(nodelist, items=[]), "NodeNames": None, "FailedNodes": failed,
                "Error": ""}
    return {"Nodes": None, "NodeNames": [], "FailedNodes": failed, "Error": ""}


_NO_POSITIONS: IntArray = np.empty(0, dtype=np.int64)
_NONE_KNOWN: BoolArray = np.empty(0, dtype=np.bool_)
_NAMES_KEY = b',"NodeNames":['
# the largest body whose decoded arguments are kept for the next request: a pod and 5000
# node names take about 90 KB; what a body decodes to is up to 25 times its size
_KEPT_BODY = 256 << 10
_SCORE_TEXT = tuple("%d}" % s for s in range(MAX_EXTENDER_PRIORITY + 1))


def _plain(names: Iterable[str]) -> bool:
    """Whether NAMES (strings) are all printable ASCII without quote or backslash, so
    that '"NAME"' is their JSON as json.dumps writes it (node names are DNS
    subdomains: they always are)."""
    try:
        text = "".join(names)
    except TypeError:           # not all strings
        return False
    return text.isascii() and text.isprintable() and '"' not in text and "\\" not in text


def _names_json(names: Sequence[str]) -> bytes:
    """The JSON array of NAMES, plain strings (see _plain), as bytes."""
    return ('["%s"]' % '","'.join(names)).encode("ascii") if names else b"[]"


def _json(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode("utf-8")


def _error(status: int, message: str) -> Answer:
    return Answer(status, _json({"Error": message}), answer.ERROR)
