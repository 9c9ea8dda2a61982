"""`hwaffinity webhook` refuses what would be unsafe or cannot work, in one line, exit 2;
`hwaffinity webhook certs` makes a CA, a serving certificate and kube-scheduler's client
certificate that verify; `webhook serve` answers the extender only to that client (or,
when told so, to any), and exports when its certificates expire."""
import base64
import http.client
import json
import logging
import os
import shutil
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time

import pytest
from prometheus_client import CollectorRegistry

from tacker_hwaffinity.kube.tlsreload import EXPIRY_METRIC, CertificateExpiry

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "tacker_hwaffinity.cli.main", "webhook"]
                          + list(args), capture_output=True, text=True, cwd=ROOT, timeout=60)


@pytest.mark.parametrize("args,message", [
    (["serve", "--no-extender"], "give --cert and --key"),
    (["serve", "--no-extender", "--cert", "/nonexistent", "--key", "/nonexistent"],
     "field --cert: no such file: /nonexistent"),
    (["serve", "--no-extender", "--insecure-for-tests", "--address", "0.0.0.0:0"],
     "plain HTTP on loopback only, not on 0.0.0.0"),
    (["serve", "--no-extender", "--insecure-for-tests", "--address", "127.0.0.1:0",
      "--cert", "x", "--key", "y"],
     "drop --cert/--key"),
    (["serve", "--no-extender", "--address", "nowhere"], "expected HOST:PORT"),
    (["certs", "--out", "/tmp/x", "--ip", "not-an-ip"], "field --ip: not an IP address"),
    (["certs", "--out", "/tmp/x", "--client-name", " "], "field --client-name: expected a "
                                                          "common name"),
])
def test_unsafe_or_impossible_settings_are_one_line_and_exit_2(args, message):
    r = _cli(*args)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


def test_certs_verify_for_the_service_names_and_ips(tmp_path):
    r = _cli("certs", "--out", str(tmp_path), "--service", "wh", "--namespace", "ns",
             "--ip", "127.0.0.1", "--dns", "wh.example.org")
    assert r.returncode == 0, r.stderr
    ca = (tmp_path / "ca.crt").read_bytes()
    assert r.stdout == "caBundle: %s\n" % base64.b64encode(ca).decode()
    assert oct((tmp_path / "tls.key").stat().st_mode & 0o777) == "0o600"
    from cryptography import x509
    cert = x509.load_pem_x509_certificate((tmp_path / "tls.crt").read_bytes())
    sans = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    assert set(sans.get_values_for_type(x509.DNSName)) == {
        "wh", "wh.ns", "wh.ns.svc", "wh.ns.svc.cluster.local", "wh.example.org"}
    assert [str(i) for i in sans.get_values_for_type(x509.IPAddress)] == ["127.0.0.1"]
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    client = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    assert client.cert_store_stats()["x509_ca"] == 1


def test_certs_pass_strict_x509_verification(tmp_path):
    """RFC 5280's key identifiers are there: Python 3.13's default client context
    (VERIFY_X509_STRICT) and openssl verify -x509_strict refuse a leaf without its
    issuer's (\"Missing Authority Key Identifier\")."""
    out = _certs(tmp_path)
    for leaf in ("tls.crt", "client.crt"):
        r = subprocess.run(["openssl", "verify", "-x509_strict", "-CAfile", str(out / "ca.crt"),
                            str(out / leaf)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 0, (leaf, r.stdout, r.stderr)
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(str(out / "tls.crt"), str(out / "tls.key"))
    client = ssl.create_default_context(cafile=str(out / "ca.crt"))
    client.verify_flags |= ssl.VERIFY_X509_STRICT
    a, b = socket.socketpair()
    with a, b:
        done = []
        thread = threading.Thread(target=lambda: done.append(
            server.wrap_socket(b, server_side=True).close()))
        thread.start()
        client.wrap_socket(a, server_hostname="127.0.0.1").close()
        thread.join(30)
    assert done


def _certs(tmp_path, name="certs", *flags):
    out = tmp_path / name
    r = _cli("certs", "--out", str(out), "--ip", "127.0.0.1", *flags)
    assert r.returncode == 0, r.stderr
    return out


def test_certs_issue_the_schedulers_client_certificate(tmp_path):
    from cryptography import x509
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID
    r = _cli("certs", "--out", str(tmp_path), "--ip", "127.0.0.1")
    assert r.returncode == 0, r.stderr
    assert "common name system:kube-scheduler" in r.stderr
    assert "%s and %s" % (tmp_path / "client.crt", tmp_path / "client.key") in r.stderr
    assert oct((tmp_path / "client.key").stat().st_mode & 0o777) == "0o600"
    ca = x509.load_pem_x509_certificate((tmp_path / "ca.crt").read_bytes())

    def load(name):
        cert = x509.load_pem_x509_certificate((tmp_path / name).read_bytes())
        cert.verify_directly_issued_by(ca)
        usage = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        return cert, list(usage)
    client, usage = load("client.crt")
    assert usage == [ExtendedKeyUsageOID.CLIENT_AUTH]
    assert [a.value for a in client.subject.get_attributes_for_oid(NameOID.COMMON_NAME)] \
        == ["system:kube-scheduler"]
    assert client.not_valid_after_utc == ca.not_valid_after_utc
    _, usage = load("tls.crt")
    assert usage == [ExtendedKeyUsageOID.SERVER_AUTH]          # serverAuth only
    # the pair loads, and a server trusting the CA verifies it as a client
    server = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    server.load_cert_chain(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    server.load_verify_locations(cafile=str(tmp_path / "ca.crt"))
    server.verify_mode = ssl.CERT_REQUIRED
    client_side = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    client_side.load_cert_chain(str(tmp_path / "client.crt"), str(tmp_path / "client.key"))
    assert _handshake(server, client_side)["subject"] == ((("commonName",
                                                            "system:kube-scheduler"),),)
    # the serving certificate does not pass for a client certificate (serverAuth only)
    as_server = ssl.create_default_context(cafile=str(tmp_path / "ca.crt"))
    as_server.load_cert_chain(str(tmp_path / "tls.crt"), str(tmp_path / "tls.key"))
    with pytest.raises(ssl.SSLError):
        _handshake(server, as_server)
    other = _cli("certs", "--out", str(tmp_path / "other"), "--client-name", "second")
    assert "common name second" in other.stderr


def _handshake(server_context, client_context):
    """The client certificate SERVER_CONTEXT verified in one handshake over a socket pair."""
    import socket
    a, b = socket.socketpair()
    got = {}

    def serve():
        try:
            with server_context.wrap_socket(a, server_side=True) as s:
                got["peer"] = s.getpeercert()
        except (ssl.SSLError, OSError) as e:
            got["error"] = e
    t = threading.Thread(target=serve)
    t.start()
    try:
        with client_context.wrap_socket(b, server_hostname="127.0.0.1") as c:
            c.recv(1)       # the server's verdict (TLS 1.3 sends it after the handshake)
    except (ssl.SSLError, OSError):
        pass
    t.join(10)
    if "error" in got:
        raise got["error"]
    return got["peer"]


@pytest.mark.parametrize("flags,message", [
    ([], "field --client-ca: the extender (/filter, /prioritize) needs --client-ca FILE"),
    (["--client-ca", "CA", "--allow-anonymous-extender"],
     "give --client-ca or --allow-anonymous-extender, not both"),
])
def test_serve_refuses_an_extender_open_to_anyone_unless_told(tmp_path, flags, message):
    out = _certs(tmp_path)
    flags = [str(out / "ca.crt") if f == "CA" else f for f in flags]
    r = _cli("serve", "--address", "127.0.0.1:0", "--cert", str(out / "tls.crt"),
             "--key", str(out / "tls.key"), "--kubeconfig", "/nonexistent", *flags)
    assert r.returncode == 2, r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1


@pytest.fixture
def in_process(monkeypatch, caplog):
    """`webhook serve ARGS` in this (main) thread, as in the process, with informers that
    sync at once and no API server, through the entry point (``main``); PROBE(port) runs
    in another thread once it serves, then SIG (SIGTERM) ends it. Returns (what PROBE
    returned, the start line)."""
    from tacker_hwaffinity.cli.main import main
    from tacker_hwaffinity.kube import client as kube_client
    from tacker_hwaffinity.kube.informer import Informer
    from tacker_hwaffinity.kube.serve import HealthServer
    servers = []
    start = HealthServer.start

    def started(self):
        servers.append(self)
        return start(self)

    def run(self, stop):
        self.synced.set()
        stop.wait()
    monkeypatch.setattr(HealthServer, "start", started)
    monkeypatch.setattr(Informer, "run", run)
    monkeypatch.setattr(kube_client, "connect", lambda *a, **kw: _Anything())
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    caplog.set_level(logging.INFO, logger="hwaffinity.webhook")

    def serve(args, probe, sig=signal.SIGTERM):
        got = {}

        def probing():
            try:
                deadline = time.monotonic() + 30
                # serving, and the component's own handler of SIG installed (before it,
                # SIGINT is main's Ctrl-C: exit 130)
                while (not servers or signal.getsignal(sig) is handlers[sig]) \
                        and time.monotonic() < deadline:
                    threading.Event().wait(0.02)
                got["probe"] = probe(servers[0].port)
            finally:
                os.kill(os.getpid(), sig)
        threading.Thread(target=probing, daemon=True).start()
        assert main(["webhook", "serve"] + args) == 0
        line = next(r.getMessage() for r in caplog.records
                    if r.getMessage().startswith("webhook on "))
        return got.get("probe"), line
    yield serve
    for s, h in handlers.items():
        signal.signal(s, h)


def _not_after(path):
    """The notAfter of the certificate at PATH, by cryptography (not the code's decoder)."""
    from cryptography import x509
    return x509.load_pem_x509_certificate(path.read_bytes()).not_valid_after_utc.timestamp()


class _Anything:
    """A stand-in for the API client: every attribute is a callable returning one."""

    def __getattr__(self, name):
        return lambda *a, **kw: _Anything()


def _post(port, path, body, context):
    conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=context)
    try:
        conn.request("POST", path, body=body, headers={"Content-Type": "application/json"})
        resp = conn.getresponse()
        return resp.status, resp.read().decode()
    finally:
        conn.close()


def _review():
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "ns"},
           "spec": {"containers": [{"name": "c", "image": "x"}]}}
    return json.dumps({"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview",
                       "request": {"uid": "u1", "operation": "CREATE", "object": pod,
                                   "kind": {"group": "", "version": "v1", "kind": "Pod"},
                                   "namespace": "ns",
                                   "userInfo": {"username": "someone"}}}).encode()


def test_the_extender_answers_only_the_schedulers_client_certificate(tmp_path, in_process):
    out = _certs(tmp_path)
    stranger = _certs(tmp_path, "stranger")     # same name, another CA
    trusting = ssl.create_default_context(cafile=str(out / "ca.crt"))

    def presenting(where):
        context = ssl.create_default_context(cafile=str(out / "ca.crt"))
        context.load_cert_chain(str(where / "client.crt"), str(where / "client.key"))
        return context
    args = json.dumps({"Pod": {"metadata": {"name": "p", "namespace": "ns"}, "spec": {}},
                       "NodeNames": ["n1"]}).encode()

    def probe(port):
        answers = {"filter": _post(port, "/filter", args, presenting(out)),
                   "prioritize": _post(port, "/prioritize", args, presenting(out)),
                   "anonymous": _post(port, "/filter", args, trusting),
                   "validate": _post(port, "/validate", _review(), trusting)}
        try:
            answers["stranger"] = _post(port, "/filter", args, presenting(stranger))
        except (ssl.SSLError, ConnectionError):       # refused in the handshake
            answers["stranger"] = "refused"
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=trusting)
        conn.request("GET", "/metrics")
        answers["metrics"] = conn.getresponse().read().decode()
        conn.close()
        return answers
    got, line = in_process(["--address", "127.0.0.1:0", "--cert", str(out / "tls.crt"),
                            "--key", str(out / "tls.key"), "--client-ca", str(out / "ca.crt"),
                            "--client-name", "system:kube-scheduler"], probe)
    assert "; extender for client certificates of %s with common name system:kube-scheduler" \
        % (out / "ca.crt") in line, line
    assert got["filter"][0] == 200 and json.loads(got["filter"][1])["Error"] == "", got
    assert got["prioritize"][0] == 200, got
    assert got["anonymous"] == (403, "/filter answers only a client certificate signed by the "
                                     "configured client CA with common name "
                                     "system:kube-scheduler\n")
    assert got["stranger"] == "refused", got
    assert got["validate"][0] == 200 and json.loads(got["validate"][1])["response"]["allowed"]
    from prometheus_client.parser import text_string_to_metric_families
    expiry = {s.labels["certificate"]: s.value
              for f in text_string_to_metric_families(got["metrics"])
              for s in f.samples if s.name == EXPIRY_METRIC}
    assert expiry == {"serving": _not_after(out / "tls.crt"),
                      "client_ca": _not_after(out / "ca.crt")}


def test_an_open_extender_says_so_in_the_start_line(tmp_path, in_process):
    out = _certs(tmp_path)
    trusting = ssl.create_default_context(cafile=str(out / "ca.crt"))
    args = json.dumps({"Pod": {"metadata": {"name": "p"}, "spec": {}},
                       "NodeNames": ["n1"]}).encode()
    got, line = in_process(["--address", "127.0.0.1:0", "--cert", str(out / "tls.crt"),
                            "--key", str(out / "tls.key"), "--allow-anonymous-extender"],
                           lambda port: _post(port, "/filter", args, trusting))
    assert line.endswith("; extender open to any client; marking no pods (no "
                         "--scheduler-name: a scheduler with the shipped managedResources "
                         "would send none)"), line
    assert got[0] == 200, got


def test_plain_http_for_tests_opens_the_extender_and_says_so(in_process):
    import urllib.request

    def probe(port):
        with urllib.request.urlopen("http://127.0.0.1:%d/healthz" % port, timeout=10) as r:
            return r.status
    got, line = in_process(["--insecure-for-tests", "--address", "127.0.0.1:0",
                            "--scheduler-name", "hwaffinity-scheduler",
                            "--scheduler-name", "default-scheduler"], probe)
    assert got == 200 and line.startswith("webhook on http://127.0.0.1:"), line
    assert line.endswith("; extender open to any client; marking the pods of "
                         "default-scheduler, hwaffinity-scheduler"), line


def test_ctrl_c_stops_the_webhook_cleanly_with_exit_0(in_process):
    """The component's own SIGINT handler stops it: not main's Ctrl-C exit 130."""
    got, line = in_process(["--insecure-for-tests", "--address", "127.0.0.1:0"],
                           lambda port: port, sig=signal.SIGINT)
    assert got and line.startswith("webhook on http://127.0.0.1:%d" % got), line


def test_the_expiry_gauge_follows_the_files_and_keeps_a_pair_that_does_not_load(tmp_path):
    old, new = _certs(tmp_path, "old"), _certs(tmp_path, "new", "--days", "30")
    live = tmp_path / "live"
    shutil.copytree(old, live)
    registry = CollectorRegistry()
    expiry = CertificateExpiry(str(live / "tls.crt"), str(live / "tls.key"),
                               client_ca=str(live / "ca.crt"))
    registry.register(expiry)

    def figures():
        return {c: registry.get_sample_value(EXPIRY_METRIC, {"certificate": c})
                for c in ("serving", "client_ca")}

    def not_after(where, name):
        return _not_after(where / name)
    first = figures()
    assert first == {"serving": not_after(old, "tls.crt"), "client_ca": not_after(old, "ca.crt")}
    assert 364 * 86400 < first["serving"] - time.time() <= 365 * 86400
    for name in ("tls.crt", "tls.key", "ca.crt"):       # renewed, as the kubelet swaps them
        shutil.copy(new / name, live / (name + ".tmp"))
        os.replace(live / (name + ".tmp"), live / name)
    renewed = figures()
    assert 29 * 86400 < renewed["serving"] - time.time() <= 30 * 86400
    assert renewed["client_ca"] == not_after(new, "ca.crt")
    shutil.copy(old / "tls.crt", live / "tls.crt.tmp")  # a certificate without its key
    os.replace(live / "tls.crt.tmp", live / "tls.crt")
    assert figures() == renewed                          # as the server: the previous pair
    with open(live / "ca.crt", "ab") as f:               # one bundle, two CAs: the earliest
        f.write((old / "ca.crt").read_bytes())
    shutil.copy(new / "tls.crt", live / "tls.crt.tmp")
    os.replace(live / "tls.crt.tmp", live / "tls.crt")
    assert figures()["client_ca"] == min(not_after(old, "ca.crt"), not_after(new, "ca.crt"))
