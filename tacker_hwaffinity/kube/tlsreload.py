"""A server's TLS context, made again from its files when they change.

cert-manager renews the serving certificate into its Secret, and the kubelet swaps
the mounted files in place (the Secret volume's ``..data`` symlink, atomically), so
a running server must pick the new pair up by itself. :meth:`ServerTLS.check` looks
at the files (``stat``: device, inode, size, modification time, through the
symlinks) and, when they changed, builds a whole new context; new connections get
it, open ones keep theirs. A pair that does not load (a key that does not match,
a half-written file) leaves the old context in place, is logged once per change and
counted in ``failed``; the next change is tried again.

With ``client_ca``, clients may present a certificate, which must then be signed by
that CA (a client without one still connects: the routes decide, see
:func:`verified_name`).

:class:`CertificateExpiry` exports when the served certificate and the client CA
expire, following the same files by the same rule.
"""
import logging
import os
import ssl
import threading
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:   # imported where used: collect() runs only when /metrics is scraped
    from prometheus_client.core import Metric


# What the files are now (:func:`_signature`): per file, None when missing.
FilesSignature = tuple[tuple[int, int, int, int] | None, ...]


class ServerTLS:
    """The SSL context of certificate CERT and key KEY (and CLIENT_CA), made again by
    :meth:`check` when the files change."""

    def __init__(self, cert: str, key: str, client_ca: str | None = None,
                 log: logging.Logger | None = None) -> None:
        self.files = tuple(f for f in (cert, key, client_ca) if f)
        self.cert, self.key, self.client_ca = cert, key, client_ca
        self.log = log or logging.getLogger(__name__)
        self.loaded = 1
        self.failed = 0
        self._lock = threading.Lock()
        self._signature = _signature(self.files)
        self.context = self._make()         # a bad pair at start is the caller's error

    def check(self) -> bool:
        """Reload when the files changed; True when a new context is in use."""
        with self._lock:
            signature = _signature(self.files)
            if signature == self._signature:
                return False
            self._signature = signature
            try:
                context = self._make()
            except (OSError, ValueError) as e:      # ssl.SSLError is an OSError
                self.failed += 1
                self.log.warning("serving certificate %s / key %s changed but do not load "
                                 "(%s); still serving the previous pair", self.cert,
                                 self.key, e)
                return False
            self.context = context
            self.loaded += 1
            self.log.info("serving certificate reloaded from %s", self.cert)
            return True

    def _make(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert, self.key)
        if self.client_ca:
            context.load_verify_locations(cafile=self.client_ca)
            context.verify_mode = ssl.CERT_OPTIONAL
        return context


EXPIRY_METRIC = "hwaffinity_tls_certificate_expiration_timestamp_seconds"


class CertificateExpiry:
    """A Prometheus collector of :data:`EXPIRY_METRIC`: when the serving certificate
    CERT (label ``certificate="serving"``) and the earliest CA of the CLIENT_CA bundle
    (``client_ca``) stop being valid, in seconds since the epoch. Read again at a
    scrape when the files changed, by :class:`ServerTLS`'s rule: a pair that does not
    load leaves the previous figures, as the server keeps serving the previous pair
    (the server logs that and counts it in ``hwaffinity_tls_reloads``)."""

    def __init__(self, cert: str, key: str, client_ca: str | None = None) -> None:
        self.cert, self.key, self.client_ca = cert, key, client_ca
        self.files = tuple(f for f in (cert, key, client_ca) if f)
        self._lock = threading.Lock()
        self._signature = _signature(self.files)
        self.not_after = self._read()   # certificate -> seconds; at start, errors are the caller's

    def describe(self) -> list["Metric"]:
        return []

    def collect(self) -> Iterator["Metric"]:
        from prometheus_client.core import GaugeMetricFamily
        with self._lock:
            signature = _signature(self.files)
            if signature != self._signature:
                self._signature = signature
                try:
                    self.not_after = self._read()
                except (OSError, ValueError, KeyError):     # ssl.SSLError is an OSError
                    pass                                    # the server logs and counts it
            not_after = dict(self.not_after)
        family = GaugeMetricFamily(
            EXPIRY_METRIC, "When the certificate in use stops being valid (notAfter), in "
            "seconds since the epoch: the serving certificate, and the earliest CA of the "
            "client CA bundle", labels=["certificate"])
        for name, seconds in sorted(not_after.items()):
            family.add_metric([name], seconds)
        yield family

    def _read(self) -> dict[str, int]:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(self.cert, self.key)
        # the ssl module's own X.509 decoder (what getpeercert() returns): the image has
        # no other (cryptography is on the operator's side only, for `webhook certs`)
        # (typeshed has no ssl._ssl, and types getpeercert()'s values as one union)
        out = {"serving": ssl.cert_time_to_seconds(
            ssl._ssl._test_decode_cert(self.cert)["notAfter"])}  # type: ignore[attr-defined]
        if self.client_ca:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
            context.load_verify_locations(cafile=self.client_ca)
            cas = context.get_ca_certs()
            if not cas:
                raise ValueError("no CA certificate in %s" % self.client_ca)
            out["client_ca"] = min(ssl.cert_time_to_seconds(c["notAfter"])  # type: ignore[arg-type]
                                   for c in cas)
        return out


def _signature(paths: Sequence[str]) -> FilesSignature:
    """What the files at PATHS are now (device, inode, size, modification time, through
    symlinks; None for a missing one): a change means they were replaced."""
    out: list[tuple[int, int, int, int] | None] = []
    for path in paths:
        try:
            st = os.stat(path)
            out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
        except OSError:
            out.append(None)
    return tuple(out)


def verified_name(sock: object) -> str | None:
    """The common name of the client certificate SOCK's peer presented and the
    client CA verified, "" for one without a common name, None for no certificate
    (or no TLS)."""
    if not isinstance(sock, ssl.SSLSocket):
        return None
    cert = sock.getpeercert()
    if not cert:
        return None
    for rdn in cert.get("subject", ()):
        for key, value in rdn:  # type: ignore[str-unpack]  # typeshed: getpeercert()'s union
            if key == "commonName":
                return value
    return ""
