"""``hwaffinity webhook``: the scheduler extender and the admission webhooks, over TLS.

``hwaffinity webhook serve`` answers, on one HTTPS port:

* ``/filter``, ``/prioritize``: kube-scheduler's extender verbs (Gt/Lt pod affinity
  from ``hwaffinity.io/pod-affinity`` and the RequiredDuringExecution terms, with
  the engine's semantics, over a list+watch cache of nodes, pods and namespaces);
* ``/validate``: the admission guard (all-namespace required anti-affinity only on
  the allowed topology keys; malformed ``hwaffinity.io/`` annotations refused);
* ``/mutate``: copies RequiredDuringExecution terms without Gt/Lt into the pod spec;
* ``/healthz`` and ``/metrics``.

``/filter`` and ``/prioritize`` answer only the client certificate ``--client-ca``
verifies (kube-scheduler's), unless ``--allow-anonymous-extender`` says any client
may. ``hwaffinity webhook certs`` makes a CA, a serving certificate and
kube-scheduler's client certificate.
"""
import base64
import ipaddress
import os
import sys

from tacker_hwaffinity import safewrite
from tacker_hwaffinity.constants import DEFAULT_AGENT_SERVICE_ACCOUNT
from tacker_hwaffinity.errors import InputError
from tacker_hwaffinity.webhook.certs import CLIENT_NAME

DEFAULT_PORT = 8443
MiB = 1 << 20
_UNITS = {"": 1, "k": 1000, "Ki": 1 << 10, "M": 1000 ** 2, "Mi": MiB, "G": 1000 ** 3,
          "Gi": 1 << 30}


def register(sub):
    p = sub.add_parser("webhook", help="scheduler extender and admission webhooks (TLS)",
                       description="The scheduler extender and the admission webhooks, "
                                   "over TLS: serve runs them, certs makes their "
                                   "certificates. Exit 0: serve stopped, or the "
                                   "certificates written; 2: bad flags or input, or serve "
                                   "cannot start.")
    verbs = p.add_subparsers(dest="verb", metavar="VERB")
    verbs.required = True
    s = verbs.add_parser(
        "serve", help="serve the extender and the webhooks over HTTPS",
        description="Serve on one HTTPS port: /filter and /prioritize, kube-scheduler's "
                    "extender verbs (Gt/Lt pod affinity from the hwaffinity.io/pod-affinity "
                    "annotation and the RequiredDuringExecution terms, over a list and "
                    "watch cache of the cluster's nodes, pods and namespaces), answered "
                    "only to the client certificate --client-ca verifies unless "
                    "--allow-anonymous-extender; /validate, the admission guard (required "
                    "anti-affinity over all namespaces only on the allowed topology keys; "
                    "malformed hwaffinity.io/ annotations refused); /mutate, which copies "
                    "RequiredDuringExecution terms without Gt/Lt into the pod spec; "
                    "/healthz and /metrics. It reads --cert and --key (reloaded when they "
                    "change) and the cluster through a kubeconfig or its service "
                    "account. It runs until SIGTERM or SIGINT. Exit 0: stopped; 2: bad "
                    "flags, or it cannot start (one line on stderr).")
    s.add_argument("--address", default="127.0.0.1:%d" % DEFAULT_PORT, metavar="HOST:PORT",
                   help="where the HTTPS routes are served; loopback unless given (the "
                        "Deployment passes 0.0.0.0:%d: the API server, kube-scheduler and "
                        "the kubelet's probes reach the pod IP)" % DEFAULT_PORT)
    s.add_argument("--cert", help="serving certificate (PEM), e.g. the Secret's tls.crt")
    s.add_argument("--key", help="its private key (PEM)")
    s.add_argument("--insecure-for-tests", action="store_true",
                   help="plain HTTP on a loopback address, for tests only (the extender "
                        "is then open to any local client, as with "
                        "--allow-anonymous-extender)")
    s.add_argument("--kubeconfig", help="kubeconfig (default: the in-cluster service account)")
    s.add_argument("--context", help="kubeconfig context")
    s.add_argument("--no-extender", action="store_true",
                   help="admission only: no cluster cache, /filter and /prioritize answer 404")
    s.add_argument("--allowed-anti-affinity-key", action="append", default=[], metavar="KEY",
                   help="a topology key that required anti-affinity over all namespaces "
                        "may use (repeatable; default kubernetes.io/hostname)")
    s.add_argument("--agent-service-account", default=DEFAULT_AGENT_SERVICE_ACCOUNT,
                   metavar="USER",
                   help="the node agent's user, the only one that may change a pod's "
                        "hwaffinity.io/numa annotation: system:serviceaccount:NAMESPACE:NAME "
                        "(default %(default)s: the node agent's ServiceAccount in the "
                        "shipped manifests)")
    s.add_argument("--hard-pod-affinity-weight", type=int, default=1, metavar="N",
                   help="as the scheduler profile's InterPodAffinity hardPodAffinityWeight")
    s.add_argument("--scheduler-name", action="append", default=[], metavar="NAME",
                   help="a scheduler (spec.schedulerName, e.g. default-scheduler) that calls "
                        "this extender with the shipped managedResources: its pods are marked "
                        "with hwaffinity.io/extender-filter and -score for the verbs whose "
                        "answer the extender can change "
                        "(repeatable; none by default: no pod is marked, which suits a "
                        "cluster whose scheduler does not call the extender, or calls it for "
                        "every pod)"),
    s.add_argument("--pending-wait", type=float, default=2.0, metavar="SECONDS",
                   help="how long a filter waits for the watch to confirm the bindings of "
                        "related pods it let through just before")
    s.add_argument("--extender-max-body", default="4Mi", metavar="SIZE",
                   help="the largest /filter or /prioritize body taken, in bytes or with "
                        "Ki/Mi/Gi (default %(default)s: node names of 5000 nodes and a pod; "
                        "raise it, e.g. to 64Mi, for a scheduler that sends whole NodeLists)")
    s.add_argument("--client-ca", metavar="FILE",
                   help="CA (PEM) of the clients that may call /filter and /prioritize: "
                        "the one that signed kube-scheduler's client certificate (the ca.crt "
                        "of hwaffinity webhook certs). The extender needs it or "
                        "--allow-anonymous-extender. /validate, /mutate, /healthz, /metrics "
                        "need no client certificate")
    s.add_argument("--client-name", action="append", default=[], metavar="CN",
                   help="with --client-ca: the common name the extender's client "
                        "certificate must carry, e.g. system:kube-scheduler (repeatable; "
                        "default: any the CA signed)")
    s.add_argument("--allow-anonymous-extender", action="store_true",
                   help="serve /filter and /prioritize to any client, without --client-ca "
                        "(anyone who reaches the port can then make the extender hold "
                        "pending records and slow scheduling)")
    s.add_argument("--max-connections", type=int, default=128, metavar="N",
                   help="open connections at most; at the cap a new one replaces the one "
                        "waiting longest for its client (default %(default)s: with their "
                        "headers and bodies they fit the 512Mi memory limit of the "
                        "shipped Deployment)")
    s.add_argument("--read-timeout", type=float, default=10.0, metavar="SECONDS",
                   help="for a TLS handshake, a new connection's first request, and "
                        "each request's headers and body (default %(default)s)")
    s.add_argument("--idle-timeout", type=float, default=60.0, metavar="SECONDS",
                   help="a kept-alive connection with no next request is closed after "
                        "this (default %(default)s)")
    s.add_argument("--log-level", default="INFO", choices=("DEBUG", "INFO", "WARNING"),
                   help="the least severe log record written (stderr, one line each)")
    s.set_defaults(func=serve)
    c = verbs.add_parser("certs", help="make a CA, a serving and a client certificate",
                         description="Write a new CA (ca.crt), a serving certificate "
                                     "signed by it (tls.crt, tls.key; ECDSA P-256) for the "
                                     "Service's DNS names (SERVICE, SERVICE.NAMESPACE, "
                                     "SERVICE.NAMESPACE.svc, SERVICE.NAMESPACE.svc."
                                     "cluster.local) and the --dns/--ip given, and "
                                     "kube-scheduler's client certificate signed by it "
                                     "(client.crt, client.key; common name --client-name), "
                                     "then print 'caBundle: ' and the CA in base64, for the "
                                     "webhook configurations' caBundle and the extender's "
                                     "caData. The CA's key is not kept. Exit 0: written; "
                                     "2: bad input, or --out cannot be written.")
    c.add_argument("--service", default="hwaffinity-webhook",
                   help="the webhook's Service, whose DNS names the serving certificate "
                        "carries")
    c.add_argument("--namespace", default="hwaffinity-system", help="the Service's namespace")
    c.add_argument("--dns", action="append", default=[], metavar="NAME",
                   help="one more DNS name (repeatable)")
    c.add_argument("--ip", action="append", default=[], metavar="ADDRESS",
                   help="an IP address SAN (repeatable), e.g. 127.0.0.1 for tests")
    c.add_argument("--client-name", default=CLIENT_NAME, metavar="CN",
                   help="the client certificate's common name: the serve's --client-name "
                        "(default %(default)s)")
    c.add_argument("--days", type=int, default=365, help="validity of every certificate")
    c.add_argument("--out", required=True, metavar="DIR",
                   help="writes ca.crt, tls.crt, tls.key (0600), client.crt, client.key "
                        "(0600) there, each replacing what is there (a link is replaced, "
                        "not followed); made 0700 if missing, else it must be yours and "
                        "writable by no one else")
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
    if not args.client_name.strip():
        raise InputError("expected a common name", field="--client-name")
    issued = certmod.issue(certmod.service_names(args.service, args.namespace) + args.dns,
                           args.ip, args.days, client_name=args.client_name)
    try:
        with safewrite.Directory(args.out, private=True) as out:
            for name, data, private in (
                    ("ca.crt", issued.ca, False), ("tls.crt", issued.cert, False),
                    ("tls.key", issued.key, True), ("client.crt", issued.client_cert, False),
                    ("client.key", issued.client_key, True)):
                out.replace(name, data, private)
    except OSError as e:
        raise InputError("cannot write: %s" % (e.strerror or e), source=e.filename or args.out,
                         field="--out")
    sys.stdout.write("caBundle: %s\n" % base64.b64encode(issued.ca).decode())
    sys.stderr.write("kube-scheduler's client certificate (common name %s): %s and %s, "
                     "the extender's tlsConfig certData and keyData in base64; webhook serve "
                     "--client-ca takes ca.crt\n" % (
                         args.client_name, os.path.join(args.out, "client.crt"),
                         os.path.join(args.out, "client.key")))
    return 0


def _address(text, insecure):
    from tacker_hwaffinity.kube.component import parse_address
    address = parse_address(text, "--address")
    if insecure:
        try:
            loopback = ipaddress.ip_address(address.host).is_loopback
        except ValueError:
            loopback = address.host == "localhost"
        if not loopback:
            raise InputError("--insecure-for-tests serves plain HTTP on loopback only, not "
                             "on %s" % address.host, field="--address")
    return address


def _size(text, flag):
    """Bytes in TEXT: a whole number with an optional k/Ki/M/Mi/G/Gi suffix."""
    digits = text.strip().rstrip("kKMGi")
    unit = text.strip()[len(digits):]
    if not digits.isdigit() or unit not in _UNITS or int(digits) * _UNITS[unit] < 1024:
        raise InputError("expected a size of at least 1Ki such as 4Mi or 67108864, got %r"
                         % text, field=flag)
    return int(digits) * _UNITS[unit]


def _http_options(args, tls):
    """HealthServer's keyword arguments from the connection flags."""
    for flag, value in (("--max-connections", args.max_connections),
                        ("--read-timeout", args.read_timeout),
                        ("--idle-timeout", args.idle_timeout)):
        if not value > 0:
            raise InputError("expected a positive number, got %s" % value, field=flag)
    if args.client_name and not args.client_ca:
        raise InputError("--client-name needs --client-ca", field="--client-name")
    if args.client_ca:
        if tls is None:
            raise InputError("--client-ca needs TLS: drop --insecure-for-tests",
                             field="--client-ca")
        if not os.path.isfile(args.client_ca):
            raise InputError("no such file: %s" % args.client_ca, field="--client-ca")
    return {"client_ca": args.client_ca, "client_names": args.client_name,
            "max_connections": args.max_connections, "read_timeout": args.read_timeout,
            "idle_timeout": args.idle_timeout}


def _extender_access(args, tls):
    """Who may call /filter and /prioritize, as the start line says it; refuses an
    extender open to anyone unless a flag asks for it."""
    if args.no_extender:
        return None
    if args.client_ca and args.allow_anonymous_extender:
        raise InputError("give --client-ca or --allow-anonymous-extender, not both",
                         field="--allow-anonymous-extender")
    if args.client_ca:
        return "extender for client certificates of %s%s" % (
            args.client_ca, " with common name " + ", ".join(args.client_name)
            if args.client_name else "")
    if tls is not None and not args.allow_anonymous_extender:
        raise InputError("the extender (/filter, /prioritize) needs --client-ca FILE (the CA "
                         "of kube-scheduler's client certificate: `webhook certs` ca.crt), "
                         "or --allow-anonymous-extender to answer any client, or "
                         "--no-extender", field="--client-ca")
    return "extender open to any client"


def _service_account(text):
    """The user name of ServiceAccount TEXT (system:serviceaccount:NAMESPACE:NAME)."""
    parts = text.split(":")
    if len(parts) != 4 or parts[:2] != ["system", "serviceaccount"] or not all(parts[2:]):
        raise InputError("expected system:serviceaccount:NAMESPACE:NAME, got %r" % text,
                         field="--agent-service-account")
    return text


def config(args):
    """The webhook.daemon.WebhookConfig of the parsed ARGS (flags checked now)."""
    from tacker_hwaffinity.webhook import admission
    from tacker_hwaffinity.webhook.daemon import WebhookConfig
    address = _address(args.address, args.insecure_for_tests)
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
    connections = _http_options(args, tls)
    access = _extender_access(args, tls)
    return WebhookConfig(
        address=address, tls=tls, connections=connections, extender_access=access,
        extender_max_body=_size(args.extender_max_body, "--extender-max-body"),
        allowed_keys=frozenset(args.allowed_anti_affinity_key
                               or admission.DEFAULT_ALLOWED_KEYS),
        agent_user=_service_account(args.agent_service_account),
        hard_pod_affinity_weight=args.hard_pod_affinity_weight, pending_wait=args.pending_wait,
        scheduler_names=frozenset(args.scheduler_name),
        kubeconfig=args.kubeconfig, context=args.context, log_level=args.log_level)


def serve(args):
    from tacker_hwaffinity.kube import component
    from tacker_hwaffinity.webhook.daemon import WebhookDaemon
    return component.run(WebhookDaemon(config(args)))
