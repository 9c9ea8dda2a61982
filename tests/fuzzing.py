"""The one fuzz property: what a pod creator, a network client or a package controls
gives a result or the project's input error, within a stated time and memory.

Every parser fuzzed in CI calls :func:`bounded` on each input hypothesis draws::

    @given(st.binary(max_size=4096))
    def test_decoder(data):
        fuzzing.bounded(wire.decode, data)

How many inputs a run draws is the hypothesis profile's (``tests/conftest.py``):
``ci`` by default, ``dev`` for the quick loop, ``long`` for minutes of fuzzing
on demand (``HYPOTHESIS_PROFILE=long pytest -m fuzz``; doc/testing.md). An input
that failed once is kept as an ``@example`` beside the test.
"""
import gc
import time
import tracemalloc

from tacker_hwaffinity.errors import InputError

SECONDS = 0.05          # CPU time of this thread for one call
MIB = 16                # peak of what the call allocates (tracemalloc)


class Unbounded(AssertionError):
    """A call took more time or memory than its bound."""


def bounded(call, *args, errors=(InputError,), seconds=SECONDS, mib=MIB, **kwargs):
    """CALL(*ARGS, **KWARGS)'s result, or None when it raised one of ERRORS (the
    project's input errors). Any other exception escapes (the test fails with it);
    so does :class:`Unbounded` when the call used more than SECONDS of this thread's
    CPU time or allocated more than MIB at its peak.

    Time and memory are measured on two calls, the first untraced (tracemalloc slows
    Python several times) and without garbage collection, so the parser must be
    deterministic for its input."""
    # the collector is off while timed: a full collection walks the whole test session's
    # heap (tens of ms late in a run), which is not the parser's cost
    collecting = gc.isenabled()
    gc.disable()
    try:
        start = time.thread_time()
        result = _outcome(call, args, kwargs, errors)
        spent = time.thread_time() - start
    finally:
        if collecting:
            gc.enable()
    if spent > seconds:
        raise Unbounded("%s took %.0f ms of CPU, over its %.0f ms bound"
                        % (_name(call), spent * 1000, seconds * 1000))
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        _outcome(call, args, kwargs, errors)
        peak = tracemalloc.get_traced_memory()[1] - base
    finally:
        if not was_tracing:
            tracemalloc.stop()
    if peak > mib * (1 << 20):
        raise Unbounded("%s allocated %.1f MiB at its peak, over its %d MiB bound"
                        % (_name(call), peak / (1 << 20), mib))
    return result


def _outcome(call, args, kwargs, errors):
    try:
        return call(*args, **kwargs)
    except errors:
        return None


def _name(call):
    return getattr(call, "__qualname__", None) or repr(call)
