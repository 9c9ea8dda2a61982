"""Keep secrets out of log records and exception messages.

A :class:`Redactor` knows the secret strings of one session (password,
passphrase, caller-registered tokens, stdin data) and replaces each
occurrence with ``***``. It is applied to every text the adapter logs or
puts into an exception; remote output returned to the caller is untouched.
"""

import typing

MASK = "***"
# A line of stdin shorter than this is not masked on its own: masking every
# "apiVersion: v1" would make messages useless. The whole stdin text and every
# registered secret are masked whatever their length.
MIN_LINE = 12


def _texts(value: typing.Union[str, bytes, None]) -> typing.List[str]:
    if value is None:
        return []
    if isinstance(value, bytes):
        value = value.decode("utf-8", "replace")
    return [value] if value else []


class Redactor:
    """Replaces known secret strings with ``***``."""

    def __init__(self, secrets: typing.Iterable[typing.Union[str, bytes, None]] = ()) -> None:
        self._secrets: typing.Set[str] = set()
        for s in secrets:
            self.add(s)

    def add(self, secret: typing.Union[str, bytes, None]) -> None:
        for text in _texts(secret):
            self._secrets.add(text)
            # also the stripped form: remote tools print values trimmed
            if text.strip() and text.strip() != text:
                self._secrets.add(text.strip())

    def add_lines(self, data: typing.Union[str, bytes, None]) -> None:
        """Register DATA (e.g. stdin) and each of its longer lines."""
        for text in _texts(data):
            self.add(text)
            for line in text.splitlines():
                line = line.strip()
                if len(line) >= MIN_LINE:
                    self._secrets.add(line)

    def child(self, extra: typing.Iterable[typing.Union[str, bytes, None]] = (),
              lines: typing.Union[str, bytes, None] = None) -> "Redactor":
        """A redactor with this one's secrets plus EXTRA (and the lines of LINES)."""
        r = Redactor(self._secrets)
        for s in extra:
            r.add(s)
        if lines is not None:
            r.add_lines(lines)
        return r

    def __call__(self, text: object) -> str:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        text = str(text)
        # longest first, so a secret containing another is masked whole
        for s in sorted(self._secrets, key=len, reverse=True):
            if s in text:
                text = text.replace(s, MASK)
        return text

    def __repr__(self) -> str:
        return "Redactor(<%d secrets>)" % len(self._secrets)
