"""A private MariaDB server on 127.0.0.1 for the Tacker tests (Debian's mariadb-server).

Its data directory, socket, pid file and log live in a run directory; it listens on a
free loopback port; ``--no-defaults`` keeps every system configuration file out. The
server is initialised with ``mariadb-install-db`` (root authenticates over the private
socket only), then one database and one user are created for the caller.
``MariaDB().start().database("tacker", "tacker", "pw")`` returns the SQLAlchemy URL
(``mysql+pymysql://...``). Stopped by pid (SIGTERM, then SIGKILL).
"""
import os
import shutil
import subprocess
import tempfile
import time

from osharness import free_port, kill_group, rss_of, serving, tail_of


class DatabaseError(Exception):
    pass


def installed():
    return all(shutil.which(p) for p in ("mariadbd", "mariadb-install-db", "mariadb"))


class MariaDB:
    def __init__(self, run_dir=None):
        self.run_dir = run_dir or tempfile.mkdtemp(prefix="hwaffinity-mariadb-")
        self.data = os.path.join(self.run_dir, "data")
        self.socket = os.path.join(self.run_dir, "mysqld.sock")
        self.log_path = os.path.join(self.run_dir, "mariadb.log")
        self.port = None
        self.proc = None
        self.startup_seconds = None

    def start(self, timeout=60):
        t0 = time.monotonic()
        self.port = free_port()
        init = subprocess.run(
            ["mariadb-install-db", "--no-defaults", "--datadir=" + self.data, "--user=root",
             "--auth-root-authentication-method=socket", "--skip-test-db"],
            capture_output=True, text=True, timeout=120)
        if init.returncode:
            raise DatabaseError("mariadb-install-db failed:\n%s%s" % (init.stdout[-2000:],
                                                                      init.stderr[-2000:]))
        self.proc = subprocess.Popen(
            ["mariadbd", "--no-defaults", "--datadir=" + self.data, "--user=root",
             "--socket=" + self.socket, "--port=%d" % self.port, "--bind-address=127.0.0.1",
             "--pid-file=" + os.path.join(self.run_dir, "mysqld.pid"),
             "--log-error=" + self.log_path, "--skip-name-resolve",
             "--innodb-buffer-pool-size=64M", "--innodb-log-file-size=48M",
             "--character-set-server=utf8mb4", "--collation-server=utf8mb4_general_ci"],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise DatabaseError("mariadbd exited (%s):\n%s" % (self.proc.returncode,
                                                                  self.log_tail()))
            if os.path.exists(self.socket) and self._sql("SELECT 1", check=False) == 0:
                self.startup_seconds = time.monotonic() - t0
                return self
            time.sleep(0.2)
        self.stop()
        raise DatabaseError("mariadbd not ready within %d s:\n%s" % (timeout, self.log_tail()))

    def _sql(self, statement, check=True):
        r = subprocess.run(["mariadb", "--no-defaults", "--socket=" + self.socket, "-uroot",
                            "-e", statement], capture_output=True, text=True, timeout=30)
        if check and r.returncode:
            raise DatabaseError("%s: %s" % (statement.split()[0], r.stderr.strip()))
        return r.returncode

    def database(self, name, user, password):
        """Create database NAME and USER@127.0.0.1 owning it; its SQLAlchemy URL."""
        self._sql("CREATE DATABASE IF NOT EXISTS `%s` CHARACTER SET utf8mb4; "
                  "CREATE USER IF NOT EXISTS '%s'@'127.0.0.1' IDENTIFIED BY '%s'; "
                  "GRANT ALL PRIVILEGES ON `%s`.* TO '%s'@'127.0.0.1'; FLUSH PRIVILEGES;"
                  % (name, user, password, name, user))
        return "mysql+pymysql://%s:%s@127.0.0.1:%d/%s?charset=utf8mb4" % (
            user, password, self.port, name)

    def rss_bytes(self):
        return rss_of(self.proc.pid) if self.proc is not None else 0

    def log_tail(self, lines=30):
        return tail_of(self.log_path, lines)

    def stop(self):
        if self.proc is not None:
            kill_group(self.proc, grace=20)
        shutil.rmtree(self.run_dir, ignore_errors=True)


def running():
    """A started server for a fixture (``osharness.serving``)."""
    return serving(MariaDB, installed(), "mariadb-server", DatabaseError)
