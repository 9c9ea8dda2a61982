"""A real Barbican API (the key manager Tacker 16 needs for Kubernetes VIMs) for the
Tacker tests: start it against a harness cloud's fake Keystone, reach it, stop it.

Tacker stores each Kubernetes VIM's fernet key in Barbican (``[k8s_vim] use_barbican``;
without a key manager it refuses the VIM), finding Barbican as ``key-manager``
(service name ``barbican``) in the catalog. ``barbican_server.py`` is the server, a
subprocess with this python (the barbican wheel is a test dependency)."""
import os
import sys

from osharness import Server

HERE = os.path.dirname(os.path.abspath(__file__))


class Barbican:
    """Barbican's API for CLOUD (an ``osharness.OpenStackCloud``), state in RUN_DIR."""

    def __init__(self, cloud, run_dir):
        self.cloud = cloud
        self.server = Server("barbican", [
            sys.executable, os.path.join(HERE, "barbican_server.py"),
            "--identity-url", cloud.info["base_url"] + "/identity", "--run-dir", run_dir],
            run_dir)

    def start(self, timeout=60):
        """Start it and add it to the catalog (``osharness.HarnessError`` with the log's
        tail when it does not start within TIMEOUT seconds)."""
        self.server.start(timeout)
        return self

    @property
    def startup_seconds(self):
        return self.server.startup_seconds

    def client(self, user, password, project="service"):
        """python-barbicanclient as USER in PROJECT (secrets belong to a project)."""
        from barbicanclient import client as barbican_client
        from keystoneauth1 import session as ks_session
        from keystoneauth1.identity import v3
        auth = v3.Password(auth_url=self.cloud.auth_url, username=user, password=password,
                           project_name=project, user_domain_name="Default",
                           project_domain_name="Default")
        return barbican_client.Client(session=ks_session.Session(auth=auth, timeout=60))

    def stop(self):
        self.server.stop()
