"""Stand-ins for kube.component's side of a daemon's start, shared by the daemons'
composition tests (tests/agent, tests/controller)."""
import threading


class RecordingWorkers:
    """The supervisor's side a daemon uses: records what it would run."""

    def __init__(self):
        self.stop = threading.Event()
        self.started = []

    def start(self, name, _target, *_args):
        self.started.append(name)
