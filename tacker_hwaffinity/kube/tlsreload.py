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
"""
import logging
import os
import ssl
import threading


class ServerTLS:
    def __init__(self, cert, key, client_ca=None, log=None):
        self.files = tuple(f for f in (cert, key, client_ca) if f)
        self.cert, self.key, self.client_ca = cert, key, client_ca
        self.log = log or logging.getLogger(__name__)
        self.loaded = 1
        self.failed = 0
        self._lock = threading.Lock()
        self._signature = self._stat()
        self.context = self._make()         # a bad pair at start is the caller's error

    def check(self):
        """Reload when the files changed; True when a new context is in use."""
        with self._lock:
            signature = self._stat()
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

    def _stat(self):
        out = []
        for path in self.files:
            try:
                st = os.stat(path)
                out.append((st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns))
            except OSError:
                out.append(None)
        return tuple(out)

    def _make(self):
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.cert, self.key)
        if self.client_ca:
            context.load_verify_locations(cafile=self.client_ca)
            context.verify_mode = ssl.CERT_OPTIONAL
        return context


def verified_name(sock):
    """The common name of the client certificate SOCK's peer presented and the
    client CA verified, "" for one without a common name, None for no certificate
    (or no TLS)."""
    if not isinstance(sock, ssl.SSLSocket):
        return None
    cert = sock.getpeercert()
    if not cert:
        return None
    for rdn in cert.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                return value
    return ""
