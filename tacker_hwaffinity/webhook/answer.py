"""What a webhook handler answers: the HTTP status, the JSON body and its outcome."""
import typing

# outcomes: the ``outcome`` label of hwaffinity_webhook_requests
ALLOWED = "allowed"     # admission: allowed without a patch
PATCHED = "patched"     # admission: allowed with a patch
DENIED = "denied"       # admission: refused
ANSWERED = "answered"   # extender: a filter or prioritize result
ERROR = "error"         # a request the handler could not answer, or an internal error


class Answer(typing.NamedTuple):
    """One reply of a webhook handler."""

    status: int         # HTTP status
    body: bytes         # JSON
    outcome: str        # one of the outcomes above, for the metrics
