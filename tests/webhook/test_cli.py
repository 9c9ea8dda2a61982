"""`hwaffinity webhook` refuses what would be unsafe or cannot work, in one line, exit 2;
`hwaffinity webhook certs` makes a CA and a serving certificate that verify."""
import base64
import os
import ssl
import subprocess
import sys

import pytest

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
