"""A one-line status on a terminal for a command that works for more than a moment.

Only when standard error is a terminal, and only once the command has run for DELAY (2 s):
one line on stderr, ``hwaffinity COMMAND: WHAT (N s)``, redrawn in place (``\\r``) as the
work moves on and every second, and erased when the command ends or writes a line of its
own. Nothing at all when stderr is not a terminal, so piped and captured output never
holds it.
"""
import sys
import threading
import time

DELAY = 2.0           # seconds of work before anything is shown
TICK = 0.5            # how often the clock is looked at while nothing is reported
WIDTH = 99            # one column short of the text width: no terminal wraps the line


def is_terminal(stream):
    """Whether STREAM is a terminal (False for a closed or fake stream)."""
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed: not a terminal
        return False


class Progress:
    """The status of one command. A context manager: the line is erased on exit.

    STREAM (stderr) must be a terminal for anything to be written; CLOCK (seconds,
    monotonic) and TICKER (a thread redrawing every TICK s) are for the tests.
    """

    def __init__(self, command, stream=None, clock=time.monotonic, ticker=True):
        self.command = command
        self.stream = sys.stderr if stream is None else stream
        self.enabled = is_terminal(self.stream)
        self.clock = clock
        self.start = clock()
        self.what = ""
        self.shown = ""            # the status on screen now ("" when none)
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.thread = None
        if self.enabled and ticker:
            self.thread = threading.Thread(target=self._tick_until_stopped, daemon=True,
                                           name="hwaffinity-progress")
            self.thread.start()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def phase(self, what):
        """Now doing WHAT."""
        self.what = what
        self.tick()

    def counted(self, items, what):
        """ITEMS (a sized sequence) passed through, counting them as "WHAT i/n"."""
        total = len(items)
        for i, item in enumerate(items):
            self.what = "%s %d/%d" % (what, i, total)
            if i % 50 == 0:
                self.tick()
            yield item
        self.phase("%s %d/%d" % (what, total, total))

    def tick(self):
        """Draw the status if the command has run for DELAY."""
        if not self.enabled:
            return
        elapsed = self.clock() - self.start
        if elapsed < DELAY:
            return
        line = ("hwaffinity %s: %s (%d s)" % (self.command, self.what, elapsed))[:WIDTH]
        with self.lock:
            if line != self.shown:
                self.stream.write("\r" + line.ljust(len(self.shown)))
                self.stream.flush()
                self.shown = line

    def write(self, text, stream):
        """TEXT (whole lines) to STREAM, the status erased first (the next tick draws it
        again below)."""
        with self.lock:
            self._erase()
            stream.write(text)
            stream.flush()

    def close(self):
        """Stop redrawing and erase the status."""
        self.stopped.set()
        if self.thread is not None:
            self.thread.join()
        with self.lock:
            self._erase()

    def _erase(self):
        if self.shown:
            self.stream.write("\r%s\r" % (" " * len(self.shown)))
            self.stream.flush()
            self.shown = ""

    def _tick_until_stopped(self):
        while not self.stopped.wait(TICK):
            self.tick()
