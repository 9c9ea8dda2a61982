"""cli/progress.py: a status line on a terminal's stderr after 2 s, erased at the end;
nothing at all on a pipe. A fake clock: no test waits."""
import contextlib
import io
import os

from tacker_hwaffinity.cli import progress


class Clock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


class _Terminal(io.StringIO):
    """A stream that says it is a terminal and keeps what was written, in order. (A real
    pty hands what was written to its reader a moment later, so reading it at once can
    miss the end; tests/cli/test_text_output.py drives a real one and waits for it.)"""

    def isatty(self):
        return True


@contextlib.contextmanager
def _terminal():
    """(a terminal stream, a function returning what reached it since the last call)."""
    stream, seen = _Terminal(), [0]

    def read():
        text = stream.getvalue()
        new, seen[0] = text[seen[0]:], len(text)
        return new
    yield stream, read


def test_on_a_terminal_the_status_shows_after_two_seconds_and_is_erased():
    clock = Clock()
    with _terminal() as (stream, read):
        with progress.Progress("plan", stream, clock, ticker=False) as status:
            status.phase("reading the cluster")
            clock.now += 1.9
            status.tick()
            assert read() == ""                     # under 2 s: nothing
            clock.now += 0.2
            status.tick()
            shown = read()
            assert shown == "\rhwaffinity plan: reading the cluster (2 s)"
            for _ in status.counted(list(range(120)), "placing pods"):
                pass
            clock.now += 1
            status.tick()
            out = read()
            assert out.endswith("\rhwaffinity plan: placing pods 120/120 (3 s)")
        final = read()
    line = "hwaffinity plan: placing pods 120/120 (3 s)"
    assert final == "\r%s\r" % (" " * len(line))


def test_a_longer_status_is_overwritten_by_a_shorter_one_without_leftovers():
    clock = Clock()
    clock.now += 5
    with _terminal() as (stream, read):
        status = progress.Progress("audit", stream, clock, ticker=False)
        status.start = 100.0
        status.phase("judging 30000 pods' placement")
        status.phase("x")
        out = read()
        status.close()
    first = "hwaffinity audit: judging 30000 pods' placement (5 s)"
    assert out == "\r" + first + "\r" + "hwaffinity audit: x (5 s)".ljust(len(first))


def test_a_line_of_output_erases_the_status_first():
    clock = Clock()
    with _terminal() as (stream, read):
        status = progress.Progress("csar validate", stream, clock, ticker=False)
        clock.now += 3
        status.phase("checking")
        read()
        out = io.StringIO()
        status.write("checked: archive\n", out)
        erased = read()
        status.close()
        assert read() == ""                         # nothing left to erase at the end
    assert out.getvalue() == "checked: archive\n"
    assert erased == "\r%s\r" % (" " * len("hwaffinity csar validate: checking (3 s)"))


def test_a_pipe_gets_nothing_ever():
    clock = Clock()
    read_fd, write_fd = os.pipe()
    with os.fdopen(write_fd, "w") as stream:
        with progress.Progress("plan", stream, clock) as status:
            assert not status.enabled and status.thread is None
            clock.now += 60
            status.phase("placing pods")
            for _ in status.counted(list(range(500)), "placing pods"):
                clock.now += 1
            status.write("", io.StringIO())
    with os.fdopen(read_fd) as f:
        assert f.read() == ""


def test_a_closed_or_plain_stream_is_no_terminal():
    closed = io.StringIO()
    closed.close()
    assert not progress.is_terminal(closed)
    assert not progress.is_terminal(io.StringIO())
    assert not progress.is_terminal(object())
