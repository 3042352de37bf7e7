"""A real accumulus cluster on loopback for the client's tests: the
controller (TLS, bearer tokens, its own SQLite state) and a worker daemon
with CPU slots, from the build's binaries ($ACCUMULUS_BINARY_DIR, default
the repository's build/bin)."""
import os
import re
import signal
import subprocess
import time

import pytest

from accumulus import Client

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(
    __file__)))))
BIN = os.environ.get("ACCUMULUS_BINARY_DIR") or os.path.join(REPO, "build", "bin")


def _free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Cluster:
    """A controller (with `controller_args` besides the usual) and workers
    in `root`; stopped by stop()."""

    def __init__(self, root, controller_args=()):
        self.root = str(root)
        self.controller_args = list(controller_args)
        self.health_port = None
        self.tls = os.path.join(self.root, "tls")
        subprocess.run([os.path.join(BIN, "accumulus-make-dev-certs"), self.tls], check=True,
                       stdout=subprocess.DEVNULL)
        self.tokens_file = os.path.join(self.root, "tokens")
        self.tokens = {role: self._add_token(role) for role in ("admin", "submitter", "viewer")}
        self.port = 0
        self.controller = None
        self.workers = []
        self.start_controller()

    def _add_token(self, role):
        out = subprocess.run([os.path.join(BIN, "accumulus"), "tokens", "add", f"py-{role}", role,
                              "--file", self.tokens_file], check=True, capture_output=True,
                             text=True)
        return out.stdout.splitlines()[0].strip()

    @property
    def address(self):
        return f"127.0.0.1:{self.port}"

    @property
    def ca_file(self):
        return os.path.join(self.tls, "ca.pem")

    def start_controller(self):
        """Starts the controller (on the same port as before, after a
        restart) and returns once it listens: its first stdout line says
        where."""
        log = open(os.path.join(self.root, "controller.log"), "a")
        self.controller = subprocess.Popen(
            [os.path.join(BIN, "accumulus-controller"), "--listen", f"127.0.0.1:{self.port}",
             "--metrics-port", "-1", "--heartbeat-ms", "1000", "--lost-worker-ms", "4000",
             "--data-dir", os.path.join(self.root, "controller"),
             "--tls-cert", os.path.join(self.tls, "controller.pem"),
             "--tls-key", os.path.join(self.tls, "controller-key.pem"),
             "--worker-ca", self.ca_file, "--tokens-file", self.tokens_file,
             *self.controller_args],
            stdout=subprocess.PIPE, stderr=log, text=True)
        line = self.controller.stdout.readline()
        match = re.search(r"grpc_port=(\d+)", line)
        if not match:
            raise RuntimeError("the controller did not start: " + self.log("controller.log"))
        self.port = int(match.group(1))
        health = re.search(r"health_port=(\d+)", line)
        self.health_port = int(health.group(1)) if health and health.group(1) != "0" else None

    def kill_controller(self):
        self.controller.send_signal(signal.SIGKILL)
        self.controller.wait()

    def start_worker(self, cpu_slots=2):
        worker_id = f"py-worker-{len(self.workers) + 1}"
        log = open(os.path.join(self.root, worker_id + ".log"), "a")
        self.workers.append(subprocess.Popen(
            [os.path.join(BIN, "accumulus-worker"), "--controller", self.address,
             "--worker-id", worker_id, "--work-dir", os.path.join(self.root, worker_id),
             "--cpu-slots", str(cpu_slots), "--cancel-grace-ms", "5000",
             "--advertise-address", "127.0.0.1",
             "--rendezvous-port-first", str(_free_port()), "--rendezvous-port-count", "1",
             "--tls-ca", self.ca_file, "--tls-cert", os.path.join(self.tls, "worker.pem"),
             "--tls-key", os.path.join(self.tls, "worker-key.pem"),
             "--intra-op-threads", "1", "--blas-threads", "1"],
            stdout=log, stderr=log))
        # Registration is the worker's doing: polled, with a deadline.
        deadline = time.monotonic() + 60
        with self.client() as c:
            while not any(w.id == worker_id for w in c.workers()):
                if time.monotonic() > deadline:
                    raise RuntimeError("the worker did not register: " + self.log(
                        worker_id + ".log"))
                time.sleep(0.05)
        return worker_id

    def client(self, role="admin", **kwargs):
        kwargs.setdefault("ca_file", self.ca_file)
        kwargs.setdefault("token", self.tokens[role])
        return Client(self.address, **kwargs)

    def log(self, name):
        with open(os.path.join(self.root, name)) as f:
            return f.read()

    def stop(self):
        """SIGTERM to every process; each must end cleanly."""
        codes = {}
        for i, w in enumerate(self.workers):
            w.send_signal(signal.SIGTERM)
            codes[f"py-worker-{i + 1}"] = w.wait(timeout=60)
        self.controller.send_signal(signal.SIGTERM)
        codes["controller"] = self.controller.wait(timeout=60)
        return codes


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """One controller and one worker with two CPU slots, for a test module."""
    c = Cluster(tmp_path_factory.mktemp("cluster"))
    c.start_worker()
    yield c
    assert c.stop() == {"py-worker-1": 0, "controller": 0}


@pytest.fixture()
def own_cluster(tmp_path):
    """A cluster for one test that restarts or kills its processes."""
    c = Cluster(tmp_path)
    c.start_worker()
    yield c
    c.stop()
