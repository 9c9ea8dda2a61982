"""The webhook's certificates (``hwaffinity webhook certs``): a CA, the webhook's
serving certificate and kube-scheduler's client certificate, both signed by it.

The API server (admission webhooks) and kube-scheduler (the extender) verify the
webhook's certificate against a CA bundle they are given: the webhook
configurations' ``clientConfig.caBundle`` and the extender's ``tlsConfig.caData``.
The webhook verifies kube-scheduler's client certificate against the same CA
(``webhook serve --client-ca``) before it answers ``/filter`` and ``/prioritize``.
One CA signs both: its key is thrown away once they are signed, so nothing else can
ever carry its signature; the extended key usages keep the roles apart (the serving
certificate is ``serverAuth`` only, the client one ``clientAuth`` only, so neither
passes for the other) and ``--client-name`` pins the client's common name.

Everything is ECDSA P-256. The serving certificate is for the Service's DNS names
(``NAME``, ``NAME.NS``, ``NAME.NS.svc``, ``NAME.NS.svc.cluster.local``) plus any
extra DNS names and IP addresses. Issuing again means a new CA and new bundles
(cert-manager's ``Certificate`` + CA injector is the alternative for rotation; see
``deploy/webhook/README.md``).
"""
import datetime
import ipaddress
from collections.abc import Sequence
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:   # cryptography is imported when certificates are issued, not with the CLI
    from cryptography.x509 import KeyUsage

CLIENT_NAME = "system:kube-scheduler"    # kube-scheduler's own user name


class Issued(NamedTuple):
    """What :func:`issue` makes, each PEM bytes."""
    ca: bytes               # the CA's certificate (its key is not kept)
    cert: bytes             # the webhook's serving certificate
    key: bytes              # its private key
    client_cert: bytes      # kube-scheduler's client certificate
    client_key: bytes       # its private key


def service_names(service: str, namespace: str,
                  cluster_domain: str = "cluster.local") -> list[str]:
    base = "%s.%s" % (service, namespace)
    return [service, base, base + ".svc", "%s.svc.%s" % (base, cluster_domain)]


def issue(dns_names: Sequence[str], ips: Sequence[str] = (), days: int = 365,
          now: datetime.datetime | None = None, client_name: str = CLIENT_NAME) -> Issued:
    """A new CA, a serving certificate for DNS_NAMES and IPS and a client certificate
    with common name CLIENT_NAME, all valid DAYS days from NOW (UTC): an
    :class:`Issued`."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = now or datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hwaffinity-webhook-ca")])
    # Key identifiers, as RFC 5280 asks (4.2.1.1, 4.2.1.2): strict verifiers (Python 3.13's
    # default context, VERIFY_X509_STRICT) refuse a certificate without its issuer's.
    ca_key_id = x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key())
    authority = x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ca_key_id)
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(_key_usage(key_cert_sign=True, crl_sign=True), critical=True)
          .add_extension(ca_key_id, critical=False)
          .add_extension(authority, critical=False)
          .sign(ca_key, hashes.SHA256()))

    def leaf(common_name: str, usage: x509.ObjectIdentifier,
             extensions: Sequence[x509.ExtensionType] = ()) -> tuple[bytes, bytes]:
        key = ec.generate_private_key(ec.SECP256R1())
        builder = (x509.CertificateBuilder()
                   .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME,
                                                               common_name)]))
                   .issuer_name(ca_name).public_key(key.public_key())
                   .serial_number(x509.random_serial_number())
                   .not_valid_before(start).not_valid_after(end)
                   .add_extension(x509.BasicConstraints(ca=False, path_length=None),
                                  critical=True)
                   .add_extension(_key_usage(), critical=True)
                   .add_extension(x509.ExtendedKeyUsage([usage]), critical=False)
                   .add_extension(x509.SubjectKeyIdentifier.from_public_key(key.public_key()),
                                  critical=False)
                   .add_extension(authority, critical=False))
        for extension in extensions:
            builder = builder.add_extension(extension, critical=False)
        cert = builder.sign(ca_key, hashes.SHA256())
        return cert.public_bytes(pem), key.private_bytes(
            pem, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())

    pem = serialization.Encoding.PEM
    names = [x509.DNSName(n) for n in dns_names] + [
        x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cert, key = leaf(str((list(dns_names) or list(ips))[0]), ExtendedKeyUsageOID.SERVER_AUTH,
                     [x509.SubjectAlternativeName(names)])
    client_cert, client_key = leaf(client_name, ExtendedKeyUsageOID.CLIENT_AUTH)
    return Issued(ca.public_bytes(pem), cert, key, client_cert, client_key)


def _key_usage(key_cert_sign: bool = False, crl_sign: bool = False) -> "KeyUsage":
    """KeyUsage: digital signature (ECDSA's handshake signatures), and for the CA
    certificate and CRL signing."""
    from cryptography import x509
    return x509.KeyUsage(digital_signature=True, key_cert_sign=key_cert_sign,
                         crl_sign=crl_sign, content_commitment=False,
                         key_encipherment=False, data_encipherment=False,
                         key_agreement=False, encipher_only=False, decipher_only=False)
