"""What the webhook's HTTP server may hold fits the memory limit ``deploy/`` ships.

The sum is taken from the shipped Deployment (its container args, read by the CLI's
own parser, and ``resources.limits.memory``) and the server's caps
(``kube.serve``, ``kube.bodies``): every allowed connection holding its most (headers
at the cap, a body of up to ``BIG_BODY`` and that body decoded), plus the larger
bodies: the room of both lanes for those arriving (anonymous, and verified client
certificates), and the one handled at a time (handed over as bytes, and decoded as
badly as JSON decodes), plus the process and its pod cache. The allowances are
stated below with where they come from.
"""
import json
import os
import tracemalloc

import yaml

from tacker_hwaffinity.cli import webhook as cli
from tacker_hwaffinity.cli.main import build_parser
from tacker_hwaffinity.kube import serve
from tacker_hwaffinity.webhook import admission, extender
from tacker_hwaffinity.webhook.daemon import ADMISSION_MAX_BODY

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KiB, MiB = 1 << 10, 1 << 20
# the process with its caches: benchmarks/bench_memory.py's webhook peaks at 157 MiB
# fed 30,000 pods and 1,000 nodes (doc/benchmarks.md); idle it is 27 MiB
PROCESS_AND_CACHE = 192 * MiB
# per connection beyond what it reads: its thread's stack pages, the TLS state, the parser's
# objects. bench_webhook_attacks.py measures 80-150 KiB (200 slow clients: +16 MiB;
# 80 stalled just under the header cap: +12 MiB)
CONNECTION_OVERHEAD = 256 * KiB
# how many bytes of Python objects a byte of JSON decodes to: an AdmissionReview of a
# captured pod (benchmarks/data/captured-pod.json, as object and oldObject) 6.9; the
# worst shape, small objects ([{},{},...]), 25 (tracemalloc's peak over json.loads)
REVIEW_DECODED = 8
WORST_DECODED = 26


def _deployment():
    with open(os.path.join(ROOT, "deploy", "webhook", "deployment.yaml")) as f:
        deployment = yaml.safe_load(f)
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    return container


def _quantity(text):
    units = {"Ki": KiB, "Mi": MiB, "Gi": 1 << 30}
    return int(text[:-2]) * units[text[-2:]] if text[-2:] in units else int(text)


def budget(container):
    """(what the server may hold, the memory limit) in bytes for CONTAINER."""
    args = build_parser().parse_args(container["args"])
    extender_body = cli._size(args.extender_max_body, "--extender-max-body")
    largest_body = max(ADMISSION_MAX_BODY, extender_body)
    per_connection = (serve.CONNECTION_BYTES + CONNECTION_OVERHEAD
                      + serve.BIG_BODY * REVIEW_DECODED)
    # arriving: the anonymous lane, and the verified one (the extender's routes answer
    # only kube-scheduler's certificate when the Deployment gives a client CA)
    lanes = sum(_lanes(ADMISSION_MAX_BODY, None if args.no_extender else extender_body,
                       args.client_ca))
    handled = largest_body * (1 + WORST_DECODED)    # handed over, decoded
    held = args.max_connections * per_connection + lanes + handled + PROCESS_AND_CACHE
    return held, _quantity(container["resources"]["limits"]["memory"])


def _lanes(admission_body, extender_body, client_ca):
    """(anonymous, verified) room in bytes of the server's lanes for bodies arriving,
    with the webhook's routes (the extender's when EXTENDER_BODY is not None)."""
    posts = {"/validate": serve.Route(None, admission_body),
             "/mutate": serve.Route(None, admission_body)}
    if extender_body is not None:
        for verb in ("/filter", "/prioritize"):
            posts[verb] = serve.Route(None, extender_body, client_cert=True)
    lanes = serve.HealthServer(0, posts=posts, client_ca=client_ca).lanes
    return lanes[False].capacity, lanes[True].capacity


def test_the_shipped_connections_with_their_caps_fit_the_memory_limit():
    held, limit = budget(_deployment())
    assert held <= limit, "the webhook may hold %.0f MiB, over its %.0f MiB limit" % (
        held / MiB, limit / MiB)


def test_the_caps_are_what_the_sum_assumes():
    # the header cap and one read bound what a connection buffers for a request's head
    assert serve.HEADER_BYTES <= 64 * KiB and serve.READ_CHUNK <= 64 * KiB
    assert serve.CONNECTION_BYTES == 2 * (serve.HEADER_BYTES + serve.READ_CHUNK) \
        + 2 * serve.BIG_BODY
    # the lanes: two of the largest body for anonymous clients; one of the extender's
    # for kube-scheduler, only where its routes answer only a client certificate
    assert _lanes(6 * MiB, 4 * MiB, "ca.crt") == (12 * MiB, 4 * MiB)
    assert _lanes(6 * MiB, 8 * MiB, None) == (16 * MiB, 0)
    assert _lanes(6 * MiB, None, "ca.crt") == (12 * MiB, 0)


def test_the_old_default_of_256_connections_would_not_have_fit():
    container = _deployment()
    container["args"] = [a for a in container["args"]
                         if not a.startswith("--max-connections")] + ["--max-connections",
                                                                      "256"]
    held, limit = budget(container)
    assert held > limit


def _peak_per_byte(decode, body):
    """tracemalloc's peak while DECODE(BODY) runs, per byte of BODY."""
    tracemalloc.start()
    try:
        decode(body)
        return tracemalloc.get_traced_memory()[1] / len(body)
    finally:
        tracemalloc.stop()


def test_the_handlers_decode_within_the_factors_the_sum_assumes():
    # measured through the handlers' own decoding, so that another decoder (orjson peaks
    # at 16.7 and 36) cannot slip under the budget unnoticed
    with open(os.path.join(ROOT, "benchmarks", "data", "captured-pod.json")) as f:
        pod = json.load(f)
    review = json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                         "request": {"uid": "u", "operation": "UPDATE", "object": pod,
                                     "oldObject": pod}}).encode()
    assert _peak_per_byte(lambda b: admission.handle("validate", b), review) <= REVIEW_DECODED
    worst = b"[" + b"{}," * (256 * KiB // 3) + b"{}]"
    assert _peak_per_byte(extender._LastNodes().args, worst) <= WORST_DECODED
