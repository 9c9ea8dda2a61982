"""The agent's connection to the runtime as an NRI plugin, kept up: connect, register,
serve until the runtime drops it, then again."""
from tacker_hwaffinity.nri.plugin import ConnectError, Plugin

RETRY_S = (0.5, 10.0)       # the first and the longest wait between connection attempts


class NriSession:
    """Serves HANDLER (an ``agent.nri_agent.NriAgent``) to the runtime's NRI socket
    SOCKET_PATH as plugin INDEX-hwaffinity; ``state`` says where the connection is
    (the readiness message while it is not registered)."""

    def __init__(self, handler, socket_path, index, log, retry=RETRY_S):
        self.handler = handler
        self.socket_path = socket_path
        self.index = index
        self.log = log
        self.retry = retry
        self.state = "connecting to %s" % socket_path

    def run(self, stop):
        """Connect, register and serve until the runtime drops us; then again, with
        backoff from RETRY[0] to RETRY[1] seconds while it refuses, until STOP is set.
        Each new connection is synchronized afresh by the runtime (Synchronize follows
        registration)."""
        handler, log, retry = self.handler, self.log, self.retry
        delay = retry[0]
        while not stop.is_set():
            plugin = Plugin(handler, self.socket_path, index=self.index, log=log)
            try:
                plugin.connect()
            except ConnectError as e:
                self.state = str(e)
                log.warning("%s; retrying in %.1f s", e, delay)
                stop.wait(delay)
                delay = min(retry[1], delay * 2)
                continue
            delay = retry[0]
            handler.plugin = plugin
            self.state = "registered"
            log.info("registered with the runtime as NRI plugin %s-hwaffinity", self.index)
            plugin.wait(stop)
            handler.plugin = None
            handler.synchronized.clear()
            plugin.close()
            if not stop.is_set():
                self.state = "the runtime closed the connection"
                log.warning("the runtime closed the NRI connection%s; reconnecting",
                            " (%s)" % plugin.close_error if plugin.close_error else "")
                stop.wait(retry[0])
