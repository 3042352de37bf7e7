#!/usr/bin/env python3
"""accumulus against its peers, side by side in one run, as ratios.

Usage: compare.py BENCH_JSON BIN_DIR COMMIT OUT_PREFIX

BENCH_JSON is accumulus_engine_bench's Google Benchmark output (the engine's
window, the plain-LibTorch textbook loop and the matmul ceiling). This script
adds, for the same models and splits: the textbook loop in Python PyTorch
(the torch whose LibTorch the engine links, PyPI's 2.11 with MKL: run this
script with that environment's python) with accumulus's thread and BLAS
settings and with PyTorch's defaults (as a user's fresh install runs it);
and whole accumulus jobs run through a real
controller and worker, with what the orchestration costs per step. Writes
OUT_PREFIX.json and OUT_PREFIX.md.
"""
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime, timezone

MODELS = ["mlp", "cnn", "charlm"]
SPLITS = [256, 64, 16, 4]
GLOBAL = 256
# Each Python run times at least this long (sized from the engine's rate),
# and at least MIN_WINDOWS windows: a fraction of a second is one scheduler
# hiccup away from a different ratio on a shared machine.
PEER_SECONDS = 1.5
MIN_WINDOWS = 3
# The Python loop with accumulus's settings runs paired with the engine: in
# each of this many sweeps over all configurations, one engine run and one
# Python run of the same length back to back (which goes first alternates);
# the ratio is the median of the pairs'. Measured minutes apart, or for different lengths, the two
# drifted apart on this shared machine (sustained load runs slower here
# than the engine bench's half-second repetitions).
PAIRED_SWEEPS = 3
# Whole jobs: enough steps that the job's start (processes, LibTorch, the
# thread-split measurement) is small against the control plane's per-step work.
JOB_WINDOWS = {"mlp": 150, "cnn": 60, "charlm": 4}
PEER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "peers", "textbook_loop.py")
PYTHON = sys.executable  # the environment whose torch the engine links

# The job spec of each model, the data shaped as in the benchmarks.
SPECS = {
    "mlp": "model: {kind: mlp, hidden: [1024, 1024]}\n"
           "data: {task: classification, features: 784, outputs: 10, samples: %d}\n",
    "cnn": "model: {kind: cnn, hidden: [16, 32], norm: batch}\n"
           "data: {task: image_classification, channels: 3, image_size: 32, outputs: 10, samples: %d}\n",
    "charlm": "model: {kind: charlm, d_model: 128, heads: 4, layers: 2}\n"
              "data: {task: language_modeling, sequence_length: 128, min_sequence_length: 128, samples: %d}\n",
}


def engine_results(path):
    """{(bench, model, micro): (samples/s, peak bytes, (intra-op, BLAS threads))}
    and the matmul FLOP/s."""
    with open(path) as f:
        data = json.load(f)
    out, flops = {}, 0.0
    for b in data["benchmarks"]:
        if b.get("aggregate_name") not in (None, "median"):
            continue
        name = b["run_name"]
        m = re.match(r"BM_(Window|Textbook)/(\w+)/micro:(\d+)(/checkpoint:(\d))?", name)
        if m and m.group(5) in (None, "0"):
            out[(m.group(1), m.group(2), int(m.group(3)))] = (
                b["items_per_second"], b.get("window_peak_bytes", 0),
                (int(b["intra_op_threads"]), int(b["blas_threads"])))
        if name.startswith("BM_Matmul"):
            flops = b["flops"]
        if name.startswith("BM_MetricsPerStep"):
            out["metrics_seconds"] = b["real_time"] * {"us": 1e-6, "ms": 1e-3, "ns": 1e-9}[
                b["time_unit"]]
    return data["context"], out, flops


def peer_windows(engine_rate):
    """Windows for a Python run that times about PEER_SECONDS."""
    return max(MIN_WINDOWS, math.ceil(PEER_SECONDS * engine_rate / GLOBAL))


def engine_paired(bin_dir, model, micro, split):
    """The engine's window in a fresh process on `split`, timed about
    PEER_SECONDS: the engine's half of a pair with a Python run."""
    env = dict(os.environ, ACCUMULUS_BENCH_THREADS="%d,%d" % split)
    out = subprocess.run(
        [os.path.join(bin_dir, "accumulus_engine_bench"),
         "--benchmark_filter=^BM_Window/%s/micro:%d/checkpoint:0/" % (model, micro),
         "--benchmark_min_time=%g" % PEER_SECONDS, "--benchmark_format=json"],
        env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["benchmarks"][0]["items_per_second"]


def python_peer(model, micro, settings, split=None, windows=MIN_WINDOWS):
    """settings: "accumulus" (its threads `split` and allocator settings) or
    "fresh" (PyTorch's defaults, as a fresh install runs it)."""
    # Defaults get a clean environment: no thread or allocator settings
    # (run.sh exports accumulus's allocator settings).
    env = {k: v for k, v in os.environ.items()
           if k not in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
                        "MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_")}
    args = [PYTHON, PEER, model, str(micro), "--windows", str(windows)]
    if settings == "accumulus":
        intra_op, blas = split
        env.update(OMP_NUM_THREADS=str(intra_op), OPENBLAS_NUM_THREADS=str(blas),
                   MKL_NUM_THREADS=str(blas),
                   MALLOC_MMAP_THRESHOLD_="4294967296", MALLOC_TRIM_THRESHOLD_="4294967296")
        args += ["--threads", str(intra_op)]
    line = subprocess.run(args, env=env, check=True, capture_output=True, text=True).stdout
    return json.loads(line.strip().splitlines()[-1])["samples_per_second"]


class Cluster:
    """A controller and one worker on loopback, as `accumulus up` runs them
    (no thread flags: each rank measures its split)."""

    def __init__(self, bin_dir):
        self.bin_dir = bin_dir
        self.dir = tempfile.mkdtemp(prefix="accumulus-bench-")
        self.controller = subprocess.Popen(
            [os.path.join(bin_dir, "accumulus-controller"), "--listen", "127.0.0.1:0",
             "--metrics-port", "-1", "--data-dir", self.dir,
             "--insecure"],  # the bench measures training, not the transport
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        port = re.search(r"grpc_port=(\d+)", self.controller.stdout.readline()).group(1)
        self.address = "127.0.0.1:" + port
        self.worker = subprocess.Popen(
            [os.path.join(bin_dir, "accumulus-worker"), "--controller", self.address,
             "--work-dir", os.path.join(self.dir, "worker"), "--cpu-slots", "1",
             "--advertise-address", "127.0.0.1", "--insecure"],
            stderr=subprocess.DEVNULL)

    def run_job(self, model, micro, windows):
        """A whole job: samples/s between its first and last step events, the
        engine's own window time inside it, and the CPU time the controller and
        the worker daemon spent between those events."""
        spec = os.path.join(self.dir, "%s-%d.yaml" % (model, micro))
        with open(spec, "w") as f:
            f.write(SPECS[model] % (GLOBAL * (windows + 1)))
            f.write("global_batch: %d\nmicro_batch: %d\nepochs: 1\nseed: 1\n"
                    "optimizer: {kind: sgd, lr: 0.01, momentum: 0.9}\n" % (GLOBAL, micro))
        watch = subprocess.Popen([os.path.join(self.bin_dir, "accumulus"), "--controller",
                                  self.address, "--insecure", "-o", "json", "submit", spec,
                                  "--watch"],
                                 stdout=subprocess.PIPE, text=True)
        times, window_seconds, split, cpu, latencies = [], [], None, [], []
        watch.stdout.readline()  # the submitted job
        for line in watch.stdout:
            received = time.time()
            event = json.loads(line)
            if "runtime" in event:
                split = (event["runtime"].get("intra_op_threads"),
                         event["runtime"].get("blas_threads"))
            if "step" in event:
                times.append(timestamp_seconds(event["time"]))
                # From the trainer's report to this watcher (the CLI), on one clock.
                latencies.append(received - times[-1])
                window_seconds.append(event["step"]["step_seconds"])
                if len(times) in (1, windows + 1):  # the first and the last step
                    cpu.append(thread_cpu_ns(self.controller.pid, self.worker.pid))
        if watch.wait() != 0:
            raise RuntimeError("job %s %d failed" % (model, micro))
        steps = len(times) - 1
        interval = (times[-1] - times[0]) / steps
        in_job_window = statistics.mean(window_seconds[1:])
        control_plane = cpu_seconds_between(cpu[0], cpu[-1])
        percentiles = statistics.quantiles(latencies, n=100)
        return {
            "samples_per_second": GLOBAL / interval,
            "threads": split,
            # Time between windows: the step's report, the event pipe.
            "between_windows": interval / in_job_window - 1,
            # Controller + worker CPU per step, as a share of the step.
            "control_plane_cpu": control_plane / steps / interval,
            "control_plane_cpu_seconds": control_plane,
            "step_latency_p50": percentiles[49],
            "step_latency_p99": percentiles[98],
        }

    def stop(self):
        for p in (self.worker, self.controller):
            p.terminate()
            p.wait()
        shutil.rmtree(self.dir, ignore_errors=True)


def thread_cpu_ns(*pids):
    """{(pid, thread id): nanoseconds on a CPU} of every live thread of `pids`,
    from the scheduler's own accounting (/proc/PID/task/TID/schedstat). The
    clock-tick counters of /proc/PID/stat count in 10 ms steps: a 150-step
    mlp job costs the daemons about 5 ticks, so one tick moved the share by
    ~0.4 points."""
    out = {}
    for pid in pids:
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    out[(pid, tid)] = int(f.read().split()[0])
            except FileNotFoundError:  # the thread ended meanwhile
                pass
    return out


def cpu_seconds_between(before, after):
    """CPU seconds spent between two thread_cpu_ns snapshots, thread by
    thread: one born meanwhile counts from zero; one ended meanwhile drops
    out (its time since `before` is lost) instead of turning the sum
    negative."""
    return sum(ns - before.get(key, 0) for key, ns in after.items()) / 1e9


def timestamp_seconds(text):
    """An RFC 3339 timestamp (nanosecond fraction allowed) as epoch seconds."""
    m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(\.\d+)?Z$", text)
    whole = datetime.fromisoformat(m.group(1)).replace(tzinfo=timezone.utc).timestamp()
    return whole + (float(m.group(2)) if m.group(2) else 0.0)


def paired_ratio(row):
    """engine ÷ Python same settings: the median of each pair's ratio (the
    machine's speed moves between sweeps; a pair's two runs move together)."""
    return statistics.median(e / p for e, p in zip(row["engine_paired_runs"],
                                                   row["python_same_settings_runs"]))


def ratio(a, b):
    return a / b if a and b else float("nan")


def main(bench_json, bin_dir, commit, prefix):
    context, engine, matmul_flops = engine_results(bench_json)
    rows = []
    paired = {}
    for sweep in range(PAIRED_SWEEPS):
        for model in MODELS:
            for micro in SPLITS:
                rate, _, split = engine[("Window", model, micro)]
                for who in ("engine", "python") if sweep % 2 == 0 else ("python", "engine"):
                    value = (engine_paired(bin_dir, model, micro, split) if who == "engine" else
                             python_peer(model, micro, "accumulus", split, peer_windows(rate)))
                    paired.setdefault((model, micro, who), []).append(value)
    cluster = Cluster(bin_dir)
    try:
        for model in MODELS:
            for micro in SPLITS:
                row = {"model": model, "micro": micro, "accumulation": GLOBAL // micro}
                row["engine"], row["engine_peak_bytes"], split = engine[("Window", model, micro)]
                row["threads"] = {"intra_op": split[0], "blas": split[1]}
                (row["libtorch_textbook"], row["textbook_peak_bytes"],
                 _) = engine[("Textbook", model, micro)]
                row["engine_paired_runs"] = paired[(model, micro, "engine")]
                row["engine_paired"] = statistics.median(row["engine_paired_runs"])
                row["python_same_settings_runs"] = paired[(model, micro, "python")]
                row["python_same_settings"] = statistics.median(row["python_same_settings_runs"])
                row["engine_per_python_same"] = paired_ratio(row)
                row["python_fresh_machine"] = python_peer(
                    model, micro, "fresh", windows=peer_windows(row["engine"]))
                row["job"] = cluster.run_job(model, micro, JOB_WINDOWS[model])
                # One step report per window, against the window's time.
                row["metrics_overhead"] = engine["metrics_seconds"] * row["engine"] / GLOBAL
                rows.append(row)
                print(json.dumps(row), file=sys.stderr)
    finally:
        cluster.stop()

    # The mlp at 256×1 against the matmul ceiling: forward 2·MACs per sample,
    # backward twice that.
    mlp_flops_per_sample = 3 * 2 * (784 * 1024 + 1024 * 1024 + 1024 * 10)
    mlp_full = next(r for r in rows if r["model"] == "mlp" and r["micro"] == 256)
    achieved = mlp_flops_per_sample * mlp_full["engine"]
    result = {
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "commit": commit,
        "machine": {"cpus": os.cpu_count(), "processor": platform.processor(),
                    "host": context.get("host_name")},
        "blas_library": context.get("blas"),
        "matmul_flops": matmul_flops,
        "mlp_256x1_flops": achieved,
        "rows": rows,
    }
    with open(prefix + ".json", "w") as f:
        json.dump(result, f, indent=2)
    with open(prefix + ".md", "w") as f:
        f.write(markdown(result))


def markdown(r):
    lines = [
        "# accumulus against its peers: global batch 256 per step",
        "",
        "- date: %s, commit: %s" % (r["date"], r["commit"]),
        "- machine: %d CPUs (%s), %s" % (r["machine"]["cpus"], r["machine"]["host"],
                                         r["blas_library"]),
        "- accumulus settings: the thread split each trainer measures for its model and "
        "micro-batch (threads column: intra-op + BLAS), one inter-op thread, its allocator "
        "settings. The peers: the textbook loop (loss / k, backward, step every k) in plain "
        "LibTorch C++ and in Python PyTorch (the same torch 2.11 and MKL) with "
        "exactly those settings; and Python PyTorch with its defaults, as a fresh install "
        "runs it.",
        "- engine and LibTorch loop: the engine bench (medians of 5 repetitions interleaved "
        "at random). Engine paired and Python same: %d sweeps over all configurations, each "
        "an engine run (a fresh process on the same split) and a Python run of about %g s "
        "back to back, medians; ÷ Python same is the median of the pairs' ratios. "
        "÷ Python fresh divides engine paired by one run at another time: the machine's "
        "speed moves between sweeps (see the paired runs in the JSON), so it is "
        "indicative." % (PAIRED_SWEEPS, PEER_SECONDS),
        "- job: whole accumulus jobs through a controller and a worker, step event to step "
        "event; orchestration = time between windows (the step's report) + the controller's "
        "and worker's CPU per step (the scheduler's per-thread nanoseconds), as a share of the "
        "step; step → watcher: from the trainer "
        "reporting a step to `accumulus submit --watch -o json` printing it (the worker's "
        "default --max-event-delay-ms 100 included).",
        "",
        "samples/s, and accumulus engine ÷ peer:",
        "",
        "| model | micro × k | threads | engine | LibTorch loop | engine paired | Python same | "
        "Python defaults | ÷ LibTorch | ÷ Python same | ÷ Python defaults |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in r["rows"]:
        e = row["engine"]
        lines.append(
            "| %s | %d × %d | %d + %d | %.0f | %.0f | %.0f | %.0f | %.0f | %.2f× | %.2f× | "
            "%.2f× |" % (
                row["model"], row["micro"], row["accumulation"], row["threads"]["intra_op"],
                row["threads"]["blas"], e, row["libtorch_textbook"], row["engine_paired"],
                row["python_same_settings"], row["python_fresh_machine"],
                ratio(e, row["libtorch_textbook"]),
                row["engine_per_python_same"],
                ratio(row["engine_paired"], row["python_fresh_machine"])))
    lines += [
        "",
        "Orchestration and metrics, per step:",
        "",
        "| model | micro × k | job samples/s | job threads | between windows | "
        "controller + worker CPU | orchestration | metrics | step → watcher p50 | p99 |",
        "| --- | --- | ---: | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for row in r["rows"]:
        job = row["job"]
        threads = job["threads"] or ("?", "?")
        lines.append("| %s | %d × %d | %.0f | %s + %s | %.2f%% | %.2f%% | %.2f%% | %.3f%% | "
                     "%.0f ms | %.0f ms |" % (
            row["model"], row["micro"], row["accumulation"], job["samples_per_second"],
            threads[0], threads[1], 100 * job["between_windows"],
            100 * job["control_plane_cpu"],
            100 * (job["between_windows"] + job["control_plane_cpu"]),
            100 * row["metrics_overhead"], 1e3 * job["step_latency_p50"],
            1e3 * job["step_latency_p99"]))
    lines += [
        "",
        "Peak tensor memory in the window (everything live: parameters, gradients, optimizer "
        "state, data, one micro-batch's activations):",
        "",
        "| model | micro × k | accumulus engine | LibTorch textbook loop | |",
        "| --- | --- | ---: | ---: | --- |",
    ]
    largest = max(row["engine_peak_bytes"] for row in r["rows"])
    for row in r["rows"]:
        bar = "#" * max(1, round(row["engine_peak_bytes"] / largest * 30))
        lines.append("| %s | %d × %d | %.1f MiB | %.1f MiB | `%s` |" % (
            row["model"], row["micro"], row["accumulation"], row["engine_peak_bytes"] / 2**20,
            row["textbook_peak_bytes"] / 2**20, bar))
    lines += [
        "",
        "The mlp at 256 × 1 runs at %.1f GFLOP/s of model arithmetic (forward + backward), "
        "%.0f%% of a 1024² matmul on the same threads (%.1f GFLOP/s)."
        % (r["mlp_256x1_flops"] / 1e9, 100 * r["mlp_256x1_flops"] / r["matmul_flops"],
           r["matmul_flops"] / 1e9),
        "",
    ]
    return "\n".join(lines)


if __name__ == "__main__":
    main(*sys.argv[1:5])
