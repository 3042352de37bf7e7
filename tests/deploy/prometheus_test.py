"""A real Prometheus scraping a running controller and three workers while
two jobs train (one on one device, one on two workers): every /metrics
endpoint passes
`promtool check metrics`, and every PromQL expression of the Grafana
dashboard and of the alert rules returns at least one series.

    python -m unittest prometheus_test      (ACCUMULUS_BIN: the binaries)
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest
import urllib.parse
import urllib.request
from pathlib import Path

import yaml

SOURCE = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("ACCUMULUS_BIN", SOURCE / "build" / "bin"))
PROMETHEUS = shutil.which("prometheus")
PROMTOOL = shutil.which("promtool")
# How long the jobs may take to show every series (two scrapes of each,
# on a loaded two-core machine).
DEADLINE_S = 180

JOB = """\
name: {name}
model: {{kind: mlp, hidden: [16]}}
data: {{samples: 100000, features: 8, outputs: 3}}
micro_batch: 8
accumulation_steps: 4
devices: {devices}
optimizer: {{kind: sgd, lr: 0.01}}
epochs: 30
threads: {{intra_op: 1, blas: 1}}
"""


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def http_get(url, timeout=10):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.status, response.read().decode()


def expressions_of_dashboard(path):
    """Every "expr" of the dashboard, its $job variable matching any job."""
    found = []

    def walk(value):
        if isinstance(value, dict):
            for key, item in value.items():
                if key == "expr" and isinstance(item, str):
                    found.append(item.replace("$job", ".+"))
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(json.loads(Path(path).read_text()))
    return found


def with_bool_comparisons(expr):
    """The alert's expression with every comparison made `bool`: the same
    series and label matching, whatever the values, so that one that names
    a metric or label nobody exports returns nothing."""
    out, i, depth, quote = [], 0, 0, None
    while i < len(expr):
        c = expr[i]
        if quote:
            out.append(c)
            if c == quote and expr[i - 1] != "\\":
                quote = None
        elif c in "\"'`":
            quote = c
            out.append(c)
        elif c == "{":
            depth += 1
            out.append(c)
        elif c == "}":
            depth -= 1
            out.append(c)
        elif depth == 0 and (m := re.match(r"(>=|<=|==|!=|>|<)(\s*bool\b)?", expr[i:])):
            out.append(m.group(0) if m.group(2) else m.group(1) + " bool")
            i += len(m.group(0))
            continue
        else:
            out.append(c)
        i += 1
    return "".join(out)


def expressions_of_rules(path):
    rules = yaml.safe_load(Path(path).read_text())
    return [(rule["alert"], with_bool_comparisons(rule["expr"]))
            for group in rules["groups"] for rule in group["rules"] if "alert" in rule]


class BoolComparisons(unittest.TestCase):
    def test_comparisons_outside_selectors_become_bool(self):
        self.assertEqual(
            with_bool_comparisons('a{x!="1",y=~"a|b"} > 0.5 and on (j) b == 1'),
            'a{x!="1",y=~"a|b"} > bool 0.5 and on (j) b == bool 1')
        self.assertEqual(with_bool_comparisons("x >= bool 3"), "x >= bool 3")


@unittest.skipIf(PROMETHEUS is None or PROMTOOL is None,
                 "Debian's prometheus (and promtool) is not installed")
class PrometheusScrapesARunningCluster(unittest.TestCase):

    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        cls.dir = Path(cls.tmp.name)
        cls.processes = []
        try:
            cls.start_cluster()
        except BaseException:
            cls.stop_all()
            raise

    @classmethod
    def tearDownClass(cls):
        cls.stop_all()
        cls.tmp.cleanup()

    @classmethod
    def spawn(cls, name, argv):
        with open(cls.dir / f"{name}.log", "w") as log:
            process = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=log, text=True)
        cls.processes.append((name, process))
        return process

    @classmethod
    def ready_line(cls, process, pattern):
        """The values of the first stdout line that matches `pattern`."""
        for line in process.stdout:
            match = re.search(pattern, line)
            if match:
                return match.groups()
        raise AssertionError(f"exited without printing {pattern!r}")

    @classmethod
    def start_cluster(cls):
        controller = cls.spawn("controller", [
            str(BIN / "accumulus-controller"), "--insecure", "--listen", "127.0.0.1:0",
            "--metrics-host", "127.0.0.1", "--metrics-port", "0", "--state-db", "memory",
            "--heartbeat-ms", "1000"])
        grpc_port, cls.controller_metrics = map(
            int, cls.ready_line(controller, r"grpc_port=(\d+) metrics_port=(\d+)"))
        cls.controller = f"127.0.0.1:{grpc_port}"
        # One CPU slot each (a worker offers no more slots than it has
        # cores, and CI's machines have two): the two-device job spans two
        # workers, the other job takes the third.
        cls.worker_metrics = []
        for worker_id in ("w1", "w2", "w3"):
            worker = cls.spawn(worker_id, [
                str(BIN / "accumulus-worker"), "--insecure", "--controller", cls.controller,
                "--worker-id", worker_id, "--cpu-slots", "1",
                "--work-dir", str(cls.dir / worker_id), "--advertise-address", "127.0.0.1",
                "--metrics-host", "127.0.0.1", "--metrics-port", "0",
                "--rendezvous-port-first", str(free_port()), "--rendezvous-port-count", "1"])
            (port,) = map(int, cls.ready_line(worker, r"ready metrics_port=(\d+)"))
            cls.worker_metrics.append(port)

        rules = cls.dir / "accumulus.rules.yml"
        shutil.copy(SOURCE / "deploy" / "prometheus" / "rules" / "accumulus.rules.yml", rules)
        config = cls.dir / "prometheus.yml"
        config.write_text(yaml.safe_dump({
            "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
            "rule_files": [str(rules)],
            "scrape_configs": [
                {"job_name": "accumulus-controller",
                 "static_configs": [{"targets": [f"127.0.0.1:{cls.controller_metrics}"]}]},
                {"job_name": "accumulus-worker",
                 "static_configs": [{"targets": [f"127.0.0.1:{p}" for p in cls.worker_metrics]}]}]}))
        checked = subprocess.run([PROMTOOL, "check", "config", str(config)],
                                 capture_output=True, text=True)
        if checked.returncode != 0:
            raise AssertionError(checked.stdout + checked.stderr)
        port = free_port()
        cls.prometheus = f"http://127.0.0.1:{port}"
        cls.spawn("prometheus", [
            PROMETHEUS, f"--config.file={config}", f"--storage.tsdb.path={cls.dir / 'tsdb'}",
            f"--web.listen-address=127.0.0.1:{port}"])
        cls.await_condition("Prometheus ready", lambda: cls.get(cls.prometheus + "/-/ready"))

        cls.jobs = {}
        for name, devices in [("metrics-one", 1), ("metrics-two", 2)]:
            spec = cls.dir / f"{name}.yaml"
            spec.write_text(JOB.format(name=name, devices=devices))
            out = cls.cli("-o", "json", "submit", str(spec))
            cls.jobs[name] = json.loads(out.splitlines()[0])["id"]

    @classmethod
    def cli(cls, *args):
        result = subprocess.run([str(BIN / "accumulus"), "--controller", cls.controller,
                                 "--insecure", *args], capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise AssertionError(f"accumulus {' '.join(args)}: {result.stderr}")
        return result.stdout

    @classmethod
    def stop_all(cls):
        for name, process in reversed(cls.processes):
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        for name, process in reversed(cls.processes):
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
            process.stdout.close()

    @staticmethod
    def get(url):
        try:
            return http_get(url, timeout=2)[0] == 200
        except OSError:
            return False

    @staticmethod
    def await_condition(what, condition, deadline_s=DEADLINE_S):
        """Polls an observable condition until it holds or the deadline."""
        deadline = time.monotonic() + deadline_s
        while not condition():
            if time.monotonic() > deadline:
                raise AssertionError(f"{what}: not within {deadline_s} s")
            time.sleep(0.5)

    def query(self, expr):
        url = self.prometheus + "/api/v1/query?" + urllib.parse.urlencode({"query": expr})
        _, body = http_get(url)
        reply = json.loads(body)
        self.assertEqual(reply["status"], "success", f"{expr}: {reply}")
        return reply["data"]["result"]

    def await_series(self, expressions):
        """Waits until every expression returns a series; fails naming
        those that never did."""
        pending = list(expressions)
        deadline = time.monotonic() + DEADLINE_S
        while pending and time.monotonic() < deadline:
            pending = [(where, e) for where, e in pending if not self.query(e)]
            if pending:
                time.sleep(1)
        self.assertEqual(pending, [], "expressions that returned no series")

    def test_every_endpoint_passes_promtool_check_metrics(self):
        self.await_series([("job progress", "accumulus_job_steps_total > 2")])
        for port in (self.controller_metrics, *self.worker_metrics):
            _, exposition = http_get(f"http://127.0.0.1:{port}/metrics")
            checked = subprocess.run([PROMTOOL, "check", "metrics"], input=exposition,
                                     capture_output=True, text=True)
            self.assertEqual(checked.returncode, 0, checked.stdout + checked.stderr)
            self.assertEqual(checked.stdout + checked.stderr, "", "no lint warnings either")

    def test_every_dashboard_expression_returns_series(self):
        expressions = expressions_of_dashboard(
            SOURCE / "deploy" / "grafana" / "dashboards" / "accumulus.json")
        self.assertGreater(len(expressions), 30)
        self.await_series([("dashboard", e) for e in expressions])

    def test_every_alert_expression_returns_series(self):
        rules = expressions_of_rules(
            SOURCE / "deploy" / "prometheus" / "rules" / "accumulus.rules.yml")
        self.assertGreaterEqual(len(rules), 8)
        self.await_series(rules)
        loaded = json.loads(http_get(self.prometheus + "/api/v1/rules")[1])
        names = {r["name"] for g in loaded["data"]["groups"] for r in g["rules"]}
        self.assertEqual(names, {name for name, _ in rules}, "Prometheus loaded every rule")

    def test_a_two_device_job_has_a_series_per_rank_with_its_worker(self):
        job = self.jobs["metrics-two"]
        self.await_series([("ranks", f'accumulus_job_tensor_peak_bytes{{job_id="{job}",rank="1"}}')])
        ranks = self.query(f'accumulus_job_tensor_peak_bytes{{job_id="{job}"}}')
        self.assertEqual(sorted(r["metric"]["rank"] for r in ranks), ["0", "1"])
        workers = {r["metric"]["worker_id"] for r in ranks}
        self.assertEqual(len(workers), 2, "each rank on its own worker")
        self.assertLessEqual(workers, {"w1", "w2", "w3"})
        budget = self.query(f'accumulus_job_memory_budget_bytes{{job_id="{job}"}} > 0')
        self.assertEqual(len(budget), 2, "each rank's budget: its slot's memory")

    def test_the_worker_reports_its_devices_and_trainers(self):
        self.await_series([("trainers", "sum(accumulus_worker_trainers_running) == 3")])
        slots = self.query('accumulus_worker_device_slots{kind="cpu"}')
        self.assertEqual(sorted(float(s["value"][1]) for s in slots), [1, 1, 1])
        connected = self.query("accumulus_worker_controller_connected")
        self.assertEqual([float(c["value"][1]) for c in connected], [1, 1, 1])


if __name__ == "__main__":
    sys.exit(unittest.main())
