"""``hwaffinity webhook serve`` as a component of ``kube.component``: its configuration,
its routes and their metrics, and the extender's cluster cache.

It reads top to bottom as the webhook starts: the certificates' expiry metric, then,
with the extender, the cluster cache and its informers, the extender's routes and the
marking; then the admission routes, readiness and the start line."""
import dataclasses
import gc
import time
from collections.abc import Callable, Iterable, Sequence
from typing import TypedDict

from prometheus_client import CollectorRegistry, Counter, Histogram

from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.kube import client as kube_client
from tacker_hwaffinity.kube import serve
from tacker_hwaffinity.kube.component import Address, Context, Refused, Started
from tacker_hwaffinity.kube.informer import Informer, InformerMetrics
from tacker_hwaffinity.kube.serve import Route
from tacker_hwaffinity.kube.tlsreload import CertificateExpiry
from tacker_hwaffinity.webhook import admission
from tacker_hwaffinity.webhook.answer import Answer
from tacker_hwaffinity.webhook.extender import Extender
from tacker_hwaffinity.webhook.marking import Marking
from tacker_hwaffinity.webhook.podcache import PodCache

JSON = "application/json"
MiB = 1 << 20
# An AdmissionReview carries the pod (object) and, for an UPDATE, the stored one
# (oldObject). The API server takes request bodies of at most 3 MiB and etcd stores
# objects of at most 1.5 MiB (its default --max-request-bytes), so a review is at
# most ~4.5 MiB plus its envelope: 6 MiB is more than the API server ever sends, and
# a body of that size decodes within the 512 MiB the Deployment grants.
ADMISSION_MAX_BODY = 6 * MiB


class Connections(TypedDict):
    """HealthServer's keyword arguments for client certificates and connections."""

    client_ca: str | None
    client_names: Iterable[str] | None
    max_connections: int
    read_timeout: float             # seconds
    idle_timeout: float             # seconds


@dataclasses.dataclass(frozen=True)
class WebhookConfig:
    """The webhook's configuration, built once from its flags (``cli/webhook.py`` says
    what each is)."""

    address: Address
    tls: tuple[str, str] | None
    """(certificate file, key file), as kube.serve takes them; None: plain HTTP (tests
    only)."""
    connections: Connections
    extender_access: str | None
    """Who may call /filter and /prioritize, as the start line says it; None: no extender."""
    extender_max_body: int                      # bytes
    allowed_keys: frozenset[str]                # topology keys of all-namespace anti-affinity
    agent_user: str                             # the node agent's user name
    hard_pod_affinity_weight: int
    pending_wait: float                         # seconds
    scheduler_names: frozenset[str]             # the schedulers whose pods are marked
    kubeconfig: str | None                      # None: the in-cluster service account
    context: str | None
    log_level: str


class Metrics:
    """The webhook's requests and their latency, by path (and outcome)."""

    def __init__(self, registry: CollectorRegistry) -> None:
        buckets = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5)
        self.requests = Counter("hwaffinity_webhook_requests", "Requests by path and outcome",
                                ["path", "outcome"], registry=registry)
        self.seconds = Histogram("hwaffinity_webhook_request_seconds", "Time to answer",
                                 ["path"], buckets=buckets, registry=registry)


@dataclasses.dataclass(frozen=True)
class ExtenderParts:
    """What starting the extender gives the webhook: whether its cache has synced, what
    to close once stopped, and the admission webhooks' marking (None: no scheduler's
    pods are marked)."""

    synced: Callable[[], bool]
    close: Sequence[Callable[[], None]]
    marking: Marking | None


def settle_heap() -> None:
    """Move what is alive now (the synced cache) out of the garbage collector's sight:
    a full collection over a cache of 10000 pods otherwise lands, now and then, in the
    middle of an answer (milliseconds at p99). Objects made later are collected as
    usual."""
    gc.collect()
    gc.freeze()


def _marking_line(config: WebhookConfig) -> str:
    """What the start line says of the marking (webhook/marking.py)."""
    if not config.scheduler_names:
        return ("marking no pods (no --scheduler-name: a scheduler with the shipped "
                "managedResources would send none)")
    return "marking the pods of " + ", ".join(sorted(config.scheduler_names))


def route(path: str, handler: Callable[[bytes], Answer],
          metrics: Metrics) -> serve.PostHandler:
    """A kube.serve POST handler for PATH: HANDLER(body) (a webhook.answer.Answer) timed
    and counted by its outcome in METRICS."""
    def answer(body: bytes) -> serve.Response:
        t0 = time.perf_counter()
        got = handler(body)
        metrics.seconds.labels(path).observe(time.perf_counter() - t0)
        metrics.requests.labels(path, got.outcome).inc()
        return got.status, JSON, got.body
    return answer


def _verb_handler(extender: Extender, verb: str) -> Callable[[bytes], Answer]:
    """The handler of the extender's VERB: the request body -> its answer."""
    return lambda body: extender.handle(verb, body)


class WebhookDaemon:
    """The webhook as a ``kube.component.Component``."""

    name = "webhook"

    def __init__(self, config: WebhookConfig) -> None:
        self.config = config
        self.log_level = config.log_level
        self.address = config.address

    def start(self, context: Context) -> Started:
        config, registry = self.config, context.registry
        metrics = Metrics(registry)
        if config.tls is not None:
            try:
                registry.register(CertificateExpiry(
                    *config.tls, client_ca=config.connections.get("client_ca")))
            except (OSError, ValueError, KeyError) as e:        # ssl.SSLError is an OSError
                raise InputError("cannot read the certificates: %s" % e, field="--cert")
        posts: dict[str, Route] = {}
        extender = ExtenderParts(lambda: True, (), None)
        if config.extender_access is not None:
            extender = self._start_extender(posts, metrics, context)
        marking = extender.marking
        posts["/validate"] = Route(route("/validate", lambda b: admission.handle(
            "validate", b, config.allowed_keys, config.agent_user, marking), metrics),
            ADMISSION_MAX_BODY)
        posts["/mutate"] = Route(route("/mutate", lambda b: admission.handle(
            "mutate", b, marking=marking), metrics), ADMISSION_MAX_BODY)
        posts["/register-node"] = Route(route("/register-node", lambda b: admission.handle(
            "register-node", b), metrics), ADMISSION_MAX_BODY)

        def ready() -> tuple[bool, str]:
            if not extender.synced():
                return False, "cluster cache not synced yet"
            return True, "ok"

        def start_lines(port: int) -> list[str]:
            return ["webhook on %s://%s:%d: %s; anti-affinity over all namespaces allowed on "
                    "%s%s" % ("http" if config.tls is None else "https", self.address.host,
                              port, ", ".join(sorted(posts)),
                              ", ".join(sorted(config.allowed_keys)),
                              "; %s; %s" % (config.extender_access, _marking_line(config))
                              if config.extender_access else "")]
        return Started(ready, start_lines, close=extender.close, server_options=dict(
            posts=posts, tls=config.tls, log=context.log, **config.connections))

    def _start_extender(self, posts: dict[str, Route], metrics: Metrics,
                        context: Context) -> ExtenderParts:
        """Start the cache's informers and add the extender's paths to POSTS."""
        config, log, workers = self.config, context.log, context.workers
        try:
            conn = kube_client.connect(config.kubeconfig, config.context)
        except kube_client.KubeError as e:
            raise Refused(str(e))
        core = conn.core()
        cache = PodCache(registry=context.registry)
        counted = InformerMetrics(context.registry)
        # the cache keeps its own index: the informers keep no store, and prune what they
        # hand it to the fields it reads (PodCache.FIELDS)
        informers = [Informer(conn, core.list_node, "Node", "nodes", cache.on_node,
                              on_sync=cache.sync_nodes, log=log, store=False,
                              fields=PodCache.FIELDS["Node"], metrics=counted),
                     Informer(conn, core.list_namespace, "Namespace", "namespaces",
                              cache.on_namespace, on_sync=cache.sync_namespaces, log=log,
                              store=False, fields=PodCache.FIELDS["Namespace"],
                              metrics=counted),
                     Informer(conn, core.list_pod_for_all_namespaces, "Pod", "pods",
                              cache.on_pod, on_sync=cache.sync_pods, log=log, store=False,
                              fields=PodCache.FIELDS["Pod"], metrics=counted)]
        for i in informers:
            workers.start("%s-watch" % i.kind.lower(), i.run, workers.stop)
        extender = Extender(cache, hard_pod_affinity_weight=config.hard_pod_affinity_weight,
                            pending_wait=config.pending_wait)
        for verb in ("filter", "prioritize"):
            posts["/" + verb] = Route(route("/" + verb, _verb_handler(extender, verb), metrics),
                                      config.extender_max_body, client_cert=True)
        settled: list[bool] = []

        def synced() -> bool:
            ok = all(i.synced.is_set() for i in informers)
            if ok and not settled:
                settled.append(True)
                settle_heap()
            return ok
        marking = Marking(cache, config.hard_pod_affinity_weight, config.scheduler_names) \
            if config.scheduler_names else None
        return ExtenderParts(synced, [conn.close], marking)
