"""Carrying out an ``install_plan.Plan`` over SSH: the package's
``install_k8s.sh`` on every node, in order.

1. Preflight: every node runs the script with ``--dry-run`` (arguments, the
   node's recorded role, SSH, sudo). Any refusal stops here, before
   anything is installed anywhere.
2. The first master runs ``init`` (or ``refresh-join`` on a cluster that
   exists); its ``HWAFFINITY_JOIN`` line names the join file, which is read
   back over the same connection (``sudo cat``: its content only ever
   travels inside SSH channels, never on a command line or in a log).
3. The other masters join one after the other, then the workers,
   ``install.parallel`` at a time.

Each run is one SSH command: stdin carries a tar stream (the script, mode
0700, and the join file, mode 0600) that a constant shell snippet unpacks
into a private ``mktemp -d`` directory, removed when the command ends. A
failure names the node, the role and the script's failed step, lists the
nodes already done, and says that rerunning the operation resumes (the
script is idempotent).
"""
import concurrent.futures
import io
import logging
import tarfile
import time

from tacker_hwaffinity.mgmt import install_plan as ip
from tacker_hwaffinity.mgmt.reconcile import HookFailed
from tacker_hwaffinity.ssh.redact import Redactor

LOG = logging.getLogger("tacker_hwaffinity.mgmt")
# Constant: values only ever arrive as quoted arguments ("$@").
UNPACK = ("umask 077; d=$(mktemp -d) || exit {rc}; "
          "trap 'rm -rf \"$d\"' EXIT; trap 'exit 129' HUP; trap 'exit 130' INT; "
          "trap 'exit 143' TERM; tar -xf - -C \"$d\" || exit {rc}; cd \"$d\" || exit {rc}; "
          "\"$@\"").format(rc=ip.EXIT_UNPACK)


# the join file's values that are credentials (install_k8s.sh writes KEY=VALUE lines)
JOIN_SECRETS = ("token", "certificate_key")


def join_secrets(join_text):
    """The join file's text and each of its credentials on its own (the bootstrap token,
    the certificate key), for the redactors: a message may quote one alone."""
    found = [join_text] if join_text else []
    for line in (join_text or "").splitlines():
        key, _, value = line.partition("=")
        if key.strip() in JOIN_SECRETS and value.strip():
            found.append(value.strip())
    return found


def bundle(script, join_text=None):
    """Tar bytes with the script (0700) and the join file (0600), no owner or time."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data, mode in ((ip.SCRIPT_NAME, script, 0o700),
                                 (ip.JOIN_NAME, join_text.encode() if join_text else None,
                                  0o600)):
            if data is None:
                continue
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), mode, 0
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class Installer:
    """Runs SCRIPT (bytes) on plan nodes. PARAMS: the parsed driver
    parameters; OPTS: their ``install`` block with defaults resolved;
    SESSION_FOR: ``node -> connected SSHSession`` (default: the ``ssh``
    block with the node's address and its role's user)."""

    def __init__(self, params, opts, script, log=LOG, session_for=None):
        self.params, self.opts, self.script, self.log = params, opts, script, log
        self._session_for = session_for or self._connect
        self._sessions = {}
        self.done = []

    def _connect(self, node):
        from tacker_hwaffinity.ssh import SSHSession
        ssh = {k: v for k, v in self.params["hwaffinity"].ssh.items() if k != "host"}
        role = self.params["master" if node.master else "worker"]
        defaults = {"username": role.get("username") or self.params["master"].get("username"),
                    "password": role.get("password") or self.params["master"].get("password")}
        return SSHSession.from_params(ssh, host=node.ssh_host, **defaults).connect()

    def session(self, node):
        if node.server_id not in self._sessions:
            self._sessions[node.server_id] = self._session_for(node)
        return self._sessions[node.server_id]

    def close(self):
        for s in self._sessions.values():
            s.close()
        self._sessions.clear()

    def _sudo(self):
        return ["sudo", "-n"] if self.opts["sudo"] else []

    def run_script(self, node, plan, dry_run=False, join_text=None):
        """(exit status, stdout, stderr) of the script on NODE."""
        argv = ip.script_argv(node, plan, self.opts, dry_run=dry_run,
                              join_file="./" + ip.JOIN_NAME if join_text else None)
        command = ["sh", "-c", UNPACK, "sh"] + self._sudo() + ["bash", "./" + ip.SCRIPT_NAME]
        timeout = 120 if dry_run else self.opts["timeout"]
        r = self.session(node).run(command + argv, stdin=bundle(self.script, join_text),
                                   timeout=timeout, secrets=join_secrets(join_text))
        return r.exit_status, r.stdout, r.stderr

    def _each(self, nodes, fn, parallel):
        """{node: (result or None, error text or None)} of FN over NODES."""
        out = {}

        def one(node):
            try:
                return fn(node), None
            except HookFailed as e:
                return None, str(e)
            except Exception as e:  # noqa: BLE001 - SSH errors name the host already
                return None, "%s (%s): %s" % (node.name, node.ssh_host, e)
        if parallel <= 1 or len(nodes) <= 1:
            return {n: one(n) for n in nodes}
        with concurrent.futures.ThreadPoolExecutor(min(parallel, len(nodes))) as pool:
            for n, res in zip(nodes, pool.map(one, nodes)):
                out[n] = res
        return out

    def preflight(self, plan):
        def check(node):
            status, out, err = self.run_script(node, plan, dry_run=True)
            if status != 0:
                raise HookFailed(ip.failure(node, status, out, err))
            return status
        results = self._each(plan.all_nodes(), check, self.opts["parallel"])
        problems = [e for _, e in results.values() if e]
        if problems:
            raise HookFailed("install preflight (install_k8s.sh --dry-run) failed on %d of %d "
                             "node(s); nothing was installed: %s"
                             % (len(problems), len(results), "; ".join(problems)))

    def _install(self, node, plan, join_text=None):
        started = time.monotonic()
        status, out, err = self.run_script(node, plan, join_text=join_text)
        if status != 0:
            raise HookFailed(Redactor(join_secrets(join_text))(ip.failure(node, status, out,
                                                                          err)))
        lines = ip.parse_output(out)
        result = lines.get("HWAFFINITY_RESULT") or {}
        entry = {"server": node.server_id, "name": node.name, "role": node.role,
                 "nodeIp": node.node_ip, "node": result.get("node_name"),
                 "changed": result.get("changed"), "seconds": round(time.monotonic() - started,
                                                                    1)}
        self.log.info("install_k8s.sh --role %s on %s (%s): %s in %.0f s", node.role, node.name,
                      node.ssh_host, "done" if entry["changed"] else "nothing to change",
                      entry["seconds"])
        return entry, lines

    def _join_text(self, node, lines):
        info = lines.get("HWAFFINITY_JOIN") or {}
        path = info.get("join_file")
        if not path:
            raise HookFailed("%s (%s, %s): the script printed no HWAFFINITY_JOIN line with the "
                             "join file" % (node.name, node.ssh_host, node.role))
        r = self.session(node).run(self._sudo() + ["cat", "--", path], timeout=60)
        if r.exit_status != 0 or not r.stdout.strip():
            raise HookFailed("%s (%s): cannot read the join file %s: %s" % (
                node.name, node.ssh_host, path, (r.stderr.strip() or "empty")[:200]))
        return r.stdout

    def _fail(self, what, problems):
        done = ", ".join("%s (%s)" % (d["name"], d["role"]) for d in self.done) or "none"
        raise HookFailed("installing Kubernetes failed %s: %s. Nodes done: %s. Rerunning the "
                         "operation resumes (install_k8s.sh is idempotent)"
                         % (what, "; ".join(problems), done))

    def install(self, plan):
        """Preflight, then the plan; returns the report's ``install`` entry."""
        started = time.monotonic()
        self.preflight(plan)
        if self.opts["dry_run"]:
            self.log.info("install dry run: install_k8s.sh --dry-run passed on %d node(s); "
                          "nothing was installed", len(plan.all_nodes()))
            return {"dryRun": True, "endpoint": plan.endpoint,
                    "nodes": [_planned(n) for n in plan.all_nodes()]}
        try:
            entry, lines = self._install(plan.first, plan)
        except HookFailed as e:
            self._fail("on the first control-plane node", [str(e)])
        if plan.new_cluster:
            self.done.append(entry)
        join_text = self._join_text(plan.first, lines)
        for node in plan.masters:
            try:
                self.done.append(self._install(node, plan, join_text)[0])
            except HookFailed as e:
                self._fail("on a control-plane node", [str(e)])
        results = self._each(plan.workers, lambda n: self._install(n, plan, join_text)[0],
                             self.opts["parallel"])
        self.done.extend(r for r, _ in results.values() if r)
        problems = [e for _, e in results.values() if e]
        if problems:
            self._fail("on %d of %d worker(s)" % (len(problems), len(plan.workers)), problems)
        return {"endpoint": plan.endpoint, "newCluster": plan.new_cluster, "nodes": self.done,
                "seconds": round(time.monotonic() - started, 1)}


def _planned(node):
    return {"server": node.server_id, "name": node.name, "role": node.role,
            "nodeIp": node.node_ip}
