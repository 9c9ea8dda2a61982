"""A CA and a serving certificate for the webhook (``hwaffinity webhook certs``).

The API server (admission webhooks) and kube-scheduler (the extender) verify the
webhook's certificate against a CA bundle they are given: the webhook
configurations' ``clientConfig.caBundle`` and the extender's ``tlsConfig.caFile``
or ``caData``. This makes both: a self-signed CA (ECDSA P-256) and a serving
certificate signed by it for the Service's DNS names (``NAME``, ``NAME.NS``,
``NAME.NS.svc``, ``NAME.NS.svc.cluster.local``) plus any extra DNS names and IP
addresses. The CA's key is not kept: issuing again means a new CA and a new bundle
(cert-manager's ``Certificate`` + CA injector is the alternative for rotation; see
``deploy/webhook/README.md``).
"""
import datetime
import ipaddress


def service_names(service, namespace, cluster_domain="cluster.local"):
    base = "%s.%s" % (service, namespace)
    return [service, base, base + ".svc", "%s.svc.%s" % (base, cluster_domain)]


def issue(dns_names, ips=(), days=365, now=None):
    """(ca_pem, cert_pem, key_pem) as bytes: a new CA and a serving certificate for
    DNS_NAMES and IPS, valid DAYS days from NOW (UTC)."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    now = now or datetime.datetime.now(datetime.timezone.utc)
    start, end = now - datetime.timedelta(minutes=5), now + datetime.timedelta(days=days)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "hwaffinity-webhook-ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(start).not_valid_after(end)
          .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
          .add_extension(x509.KeyUsage(digital_signature=True, key_cert_sign=True,
                                       crl_sign=True, content_commitment=False,
                                       key_encipherment=False, data_encipherment=False,
                                       key_agreement=False, encipher_only=False,
                                       decipher_only=False), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    names = [x509.DNSName(n) for n in dns_names] + [
        x509.IPAddress(ipaddress.ip_address(i)) for i in ips]
    cn = (list(dns_names) or list(ips))[0]
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, str(cn))]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(start).not_valid_after(end)
            .add_extension(x509.SubjectAlternativeName(names), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .sign(ca_key, hashes.SHA256()))
    pem = serialization.Encoding.PEM
    key_pem = key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption())
    return ca.public_bytes(pem), cert.public_bytes(pem), key_pem
