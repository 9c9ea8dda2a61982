"""Password authentication that succeeds.

The real sshd runs with UsePAM no, so it checks passwords against
/etc/shadow; root's password there is locked ('*') in CI and changing it is
not the tests' business. The real sshd therefore proves that a wrong password
is refused without retry (test_secrets.py), and this in-process paramiko
server proves that the right one is sent and accepted.
"""
import socket
import subprocess
import threading

import paramiko
import pytest

from tacker_hwaffinity.ssh import AuthenticationError, SSHSession, Target

PASSWORD = "s3cret with spaces and 'quotes'"


class _Server(paramiko.ServerInterface):
    def __init__(self):
        self.commands = []
        self.event = threading.Event()

    def get_allowed_auths(self, username):
        return "password"

    def check_auth_password(self, username, password):
        ok = username == "tacker" and password == PASSWORD
        return paramiko.AUTH_SUCCESSFUL if ok else paramiko.AUTH_FAILED

    def check_channel_request(self, kind, chanid):
        return paramiko.OPEN_SUCCEEDED if kind == "session" else \
            paramiko.OPEN_FAILED_ADMINISTRATIVELY_PROHIBITED

    def check_channel_exec_request(self, channel, command):
        self.commands.append(command.decode())
        threading.Thread(target=self._reply, args=(channel,), daemon=True).start()
        return True

    @staticmethod
    def _reply(channel):
        # paramiko sends the exec request's success reply after this check
        # returns: answering first would look like a channel closed too early.
        # The client sends EOF (the command has no stdin) once it has that reply.
        channel.settimeout(10)
        try:
            if channel.recv(1) == b"":
                channel.sendall(b"ran\n")
                channel.send_exit_status(0)
                channel.shutdown_write()
        finally:
            channel.close()


@pytest.fixture
def fake_server(tmp_path):
    keyfile = tmp_path / "host"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(keyfile)],
                   check=True, timeout=30)
    host_key = paramiko.Ed25519Key.from_private_key_file(str(keyfile))
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.settimeout(10)
    server = _Server()
    transports = []

    def serve():
        for _ in range(2):
            try:
                conn, _ = listener.accept()
            except OSError:
                return
            t = paramiko.Transport(conn)
            t.add_server_key(host_key)
            t.start_server(server=server)
            transports.append(t)
    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    known = "[127.0.0.1]:%d %s %s\n" % (listener.getsockname()[1], host_key.get_name(),
                                        host_key.get_base64())
    yield server, listener.getsockname()[1], known
    listener.close()
    thread.join(10)
    for t in transports:
        t.close()


def test_password_auth_succeeds(fake_server):
    server, port, known = fake_server
    t = Target("127.0.0.1", "tacker", port=port, password=PASSWORD, known_hosts=known)
    with SSHSession(t, remote_timeout=False) as ssh:
        assert ssh.run(["echo", "x y"]).stdout == "ran\n"
    assert server.commands == ["echo 'x y'"]
    bad = Target("127.0.0.1", "tacker", port=port, password="wrong", known_hosts=known)
    with pytest.raises(AuthenticationError, match="tried: password"):
        SSHSession(bad).connect()
