"""``hwaffinity webhook``: the scheduler extender and the admission webhooks, over TLS.

``hwaffinity webhook serve`` answers, on one HTTPS port:

* ``/filter``, ``/prioritize``: kube-scheduler's extender verbs (Gt/Lt pod affinity
  from ``hwaffinity.io/pod-affinity`` and the RequiredDuringExecution terms, with
  the engine's semantics, over a list+watch cache of nodes, pods and namespaces);
* ``/validate``: the admission guard (all-namespace required anti-affinity only on
  the allowed topology keys; malformed ``hwaffinity.io/`` annotations refused);
* ``/mutate``: copies RequiredDuringExecution terms without Gt/Lt into the pod spec;
* ``/healthz`` and ``/metrics``.

``hwaffinity webhook certs`` makes a CA and a serving certificate for it.
"""
import base64
import ipaddress
import json
import logging
import os
import signal
import sys
import threading
import time

from tacker_hwaffinity.errors import InputError

DEFAULT_PORT = 8443
JSON = "application/json"


def register(sub):
    p = sub.add_parser("webhook", help="scheduler extender and admission webhooks (TLS)",
                       description=__doc__.splitlines()[0])
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    s = verbs.add_parser("serve", help="serve the extender and the webhooks over HTTPS")
    s.add_argument("--address", default="0.0.0.0:%d" % DEFAULT_PORT, metavar="HOST:PORT")
    s.add_argument("--cert", help="serving certificate (PEM), e.g. the Secret's tls.crt")
    s.add_argument("--key", help="its private key (PEM)")
    s.add_argument("--insecure-for-tests", action="store_true",
                   help="plain HTTP on a loopback address, for tests only")
    s.add_argument("--kubeconfig", help="kubeconfig (default: the in-cluster service account)")
    s.add_argument("--context", help="kubeconfig context")
    s.add_argument("--no-extender", action="store_true",
                   help="admission only: no cluster cache, /filter and /prioritize answer 404")
    s.add_argument("--allowed-anti-affinity-key", action="append", default=[], metavar="KEY",
                   help="a topology key that required anti-affinity over all namespaces "
                        "may use (repeatable; default kubernetes.io/hostname)")
    s.add_argument("--hard-pod-affinity-weight", type=int, default=1, metavar="N",
                   help="as the scheduler profile's InterPodAffinity hardPodAffinityWeight")
    s.add_argument("--pending-wait", type=float, default=2.0, metavar="SECONDS",
                   help="how long a filter waits for the watch to confirm the bindings of "
                        "related pods it let through just before")
    s.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING"))
    s.set_defaults(func=serve)
    c = verbs.add_parser("certs", help="make a CA and a serving certificate")
    c.add_argument("--service", default="hwaffinity-webhook")
    c.add_argument("--namespace", default="hwaffinity-system")
    c.add_argument("--dns", action="append", default=[], metavar="NAME",
                   help="one more DNS name (repeatable)")
    c.add_argument("--ip", action="append", default=[], metavar="ADDRESS",
                   help="an IP address SAN (repeatable), e.g. 127.0.0.1 for tests")
    c.add_argument("--days", type=int, default=365)
    c.add_argument("--out", required=True, metavar="DIR",
                   help="writes ca.crt, tls.crt, tls.key (0600) there")
    c.set_defaults(func=certs)


def certs(args):
    from tacker_hwaffinity.webhook import certs as certmod
    for ip in args.ip:
        try:
            ipaddress.ip_address(ip)
        except ValueError:
            raise InputError("not an IP address: %r" % ip, field="--ip")
    if args.days < 1:
        raise InputError("expected at least 1 day", field="--days")
    ca, cert, key = certmod.issue(certmod.service_names(args.service, args.namespace)
                                  + args.dns, args.ip, args.days)
    os.makedirs(args.out, exist_ok=True)
    for name, data, mode in (("ca.crt", ca, 0o644), ("tls.crt", cert, 0o644),
                             ("tls.key", key, 0o600)):
        path = os.path.join(args.out, name)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, mode)
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.chmod(path, mode)
    sys.stdout.write("caBundle: %s\n" % base64.b64encode(ca).decode())
    return 0


class Metrics:
    def __init__(self, registry):
        from prometheus_client import Counter, Histogram
        buckets = (0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.5, 2.5)
        self.requests = Counter("hwaffinity_webhook_requests", "Requests by path and outcome",
                                ["path", "outcome"], registry=registry)
        self.seconds = Histogram("hwaffinity_webhook_request_seconds", "Time to answer",
                                 ["path"], buckets=buckets, registry=registry)


def _outcome(path, status, body):
    if status != 200:
        return "error"
    if path in ("/validate", "/mutate"):
        response = json.loads(body).get("response") or {}
        if not response.get("allowed"):
            return "denied"
        return "patched" if response.get("patch") else "allowed"
    if path == "/filter":   # "Error" is the answer's last key: no need to decode 5000 names
        return "answered" if body.endswith(b'"Error":""}') else "error"
    return "answered"


def settle_heap():
    """Move what is alive now (the synced cache) out of the garbage collector's sight:
    a full collection over a cache of 10000 pods otherwise lands, now and then, in the
    middle of an answer (milliseconds at p99). Objects made later are collected as
    usual."""
    import gc
    gc.collect()
    gc.freeze()


def _route(path, handler, metrics):
    def answer(body):
        t0 = time.perf_counter()
        status, out = handler(body)
        metrics.seconds.labels(path).observe(time.perf_counter() - t0)
        metrics.requests.labels(path, _outcome(path, status, out)).inc()
        return status, JSON, out
    return answer


def _address(text, insecure):
    from tacker_hwaffinity.cli.agent import _address as host_port
    host, port = host_port(text, "--address")
    if insecure:
        try:
            loopback = ipaddress.ip_address(host).is_loopback
        except ValueError:
            loopback = host == "localhost"
        if not loopback:
            raise InputError("--insecure-for-tests serves plain HTTP on loopback only, not "
                             "on %s" % host, field="--address")
    return host, port


def serve(args):
    from prometheus_client import CollectorRegistry

    from tacker_hwaffinity.kube.serve import HealthServer
    from tacker_hwaffinity.webhook import admission
    logging.basicConfig(level=args.log_level, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    logging.getLogger("urllib3.connectionpool").setLevel(logging.ERROR)
    log = logging.getLogger("hwaffinity.webhook")
    host, port = _address(args.address, args.insecure_for_tests)
    if args.insecure_for_tests:
        if args.cert or args.key:
            raise InputError("--insecure-for-tests serves plain HTTP: drop --cert/--key",
                             field="--insecure-for-tests")
        tls = None
    else:
        if not (args.cert and args.key):
            raise InputError("give --cert and --key (see `hwaffinity webhook certs`)",
                             field="--cert")
        for flag, path in (("--cert", args.cert), ("--key", args.key)):
            if not os.path.isfile(path):
                raise InputError("no such file: %s" % path, field=flag)
        tls = (args.cert, args.key)
    allowed = frozenset(args.allowed_anti_affinity_key or admission.DEFAULT_ALLOWED_KEYS)
    registry = CollectorRegistry()
    metrics = Metrics(registry)
    posts = {"/validate": _route("/validate",
                                 lambda b: admission.handle("validate", b, allowed), metrics),
             "/mutate": _route("/mutate", lambda b: admission.handle("mutate", b), metrics)}
    stop = threading.Event()
    cache_ready = _start_extender(args, posts, metrics, stop, log)
    if cache_ready is None:
        return 2

    def health():
        if not cache_ready():
            return False, "cluster cache not synced yet"
        return True, "ok"
    try:
        server = HealthServer(port, host=host, registry=registry, health=health, posts=posts,
                              tls=tls).start()
    except (OSError, ValueError) as e:          # ssl.SSLError is an OSError
        stop.set()
        raise InputError("cannot serve on %s:%d: %s" % (host, port, e), field="--address")
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_: stop.set())
    log.info("webhook on %s://%s:%d: %s; anti-affinity over all namespaces allowed on %s",
             "http" if tls is None else "https", host, server.port,
             ", ".join(sorted(posts)), ", ".join(sorted(allowed)))
    try:
        stop.wait()
    finally:
        server.stop()
    return 0


def _start_extender(args, posts, metrics, stop, log):
    """Start the cache's informers and add the extender's paths to POSTS; returns a
    callable telling whether the cache is synced (None: could not connect)."""
    if args.no_extender:
        return lambda: True
    from tacker_hwaffinity.kube import client as kube_client
    from tacker_hwaffinity.kube.informer import Informer
    from tacker_hwaffinity.webhook.extender import Extender
    from tacker_hwaffinity.webhook.podcache import PodCache
    try:
        conn = kube_client.connect(args.kubeconfig, args.context)
    except kube_client.KubeError as e:
        sys.stderr.write("hwaffinity webhook: %s\n" % e)
        return None
    core = conn.core()
    cache = PodCache()
    informers = [Informer(conn, core.list_node, "Node", "nodes", cache.on_node,
                          on_sync=cache.sync_nodes, log=log),
                 Informer(conn, core.list_namespace, "Namespace", "namespaces",
                          cache.on_namespace, on_sync=cache.sync_namespaces, log=log),
                 Informer(conn, core.list_pod_for_all_namespaces, "Pod", "pods", cache.on_pod,
                          on_sync=cache.sync_pods, log=log)]
    for i in informers:
        threading.Thread(target=i.run, args=(stop,), daemon=True, name="informer-" + i.kind
                         ).start()
    extender = Extender(cache, hard_pod_affinity_weight=args.hard_pod_affinity_weight,
                        pending_wait=args.pending_wait)
    for verb in ("filter", "prioritize"):
        posts["/" + verb] = _route("/" + verb, lambda b, v=verb: extender.handle(v, b),
                                   metrics)
    settled = []

    def synced():
        ok = all(i.synced.is_set() for i in informers)
        if ok and not settled:
            settled.append(True)
            settle_heap()
        return ok
    return synced
