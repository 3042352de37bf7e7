#!/usr/bin/env python3
"""How long after a controller restart every worker is registered again.

Starts a controller and WORKERS worker daemons on loopback, waits until all
are registered, SIGKILLs the controller, keeps it down for each outage in
OUTAGES (seconds), starts it again on the same port and state, and measures
from its ready line until `accumulus workers` lists every worker. The bound
documented in docs/operations.md is 3 s (the link's redial backoff tops out
at 2 s, with 20% jitter).

  bench/reregister.py [--build build] [--workers 4] [--rounds 3]
Writes bench/results/reregister-<UTC stamp>.md.
"""
import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import tempfile
import time

OUTAGES = [0.5, 2, 5, 10]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_controller(bin_dir, port, data_dir, certs, log):
    # TLS, as a cluster runs by default: re-registering includes the handshake.
    p = subprocess.Popen(
        [f"{bin_dir}/accumulus-controller", "--listen", f"127.0.0.1:{port}", "--metrics-port",
         "-1", "--data-dir", data_dir, "--tls-cert", f"{certs}/controller.pem", "--tls-key",
         f"{certs}/controller-key.pem", "--worker-ca", f"{certs}/ca.pem"],
        stdout=subprocess.PIPE, stderr=log, text=True)
    line = p.stdout.readline()
    if "ready" not in line:
        raise RuntimeError("controller did not start")
    return p


def registered(bin_dir, port, certs):
    r = subprocess.run([f"{bin_dir}/accumulus", "--controller", f"127.0.0.1:{port}", "--ca-file",
                        f"{certs}/ca.pem", "-o", "json", "workers"],
                       capture_output=True, text=True)
    if r.returncode != 0 or not r.stdout.strip():
        return 0
    return len(json.loads(r.stdout.splitlines()[0]).get("workers", []))


def wait_for(bin_dir, port, certs, count, timeout=60):
    start = time.monotonic()
    while registered(bin_dir, port, certs) < count:
        if time.monotonic() - start > timeout:
            raise RuntimeError("workers did not register")
        time.sleep(0.02)
    return time.monotonic() - start


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    bin_dir = os.path.abspath(os.path.join(args.build, "bin"))
    root = tempfile.mkdtemp(prefix="accumulus-reregister-")
    log = open(os.path.join(root, "processes.log"), "w")
    port = free_port()
    certs = f"{root}/tls"
    subprocess.run([f"{bin_dir}/accumulus-make-dev-certs", certs], check=True, stdout=log)
    controller = start_controller(bin_dir, port, f"{root}/controller", certs, log)
    workers = [subprocess.Popen(
        [f"{bin_dir}/accumulus-worker", "--controller", f"127.0.0.1:{port}", "--worker-id",
         f"w{i}", "--work-dir", f"{root}/w{i}", "--cpu-slots", "1", "--tls-ca",
         f"{certs}/ca.pem", "--tls-cert", f"{certs}/worker.pem", "--tls-key",
         f"{certs}/worker-key.pem"], stderr=log)
        for i in range(args.workers)]
    rows = []
    try:
        wait_for(bin_dir, port, certs, args.workers)
        for outage in OUTAGES:
            times = []
            for _ in range(args.rounds):
                controller.send_signal(signal.SIGKILL)
                controller.wait()
                time.sleep(outage)  # the outage being measured
                controller = start_controller(bin_dir, port, f"{root}/controller", certs, log)
                times.append(wait_for(bin_dir, port, certs, args.workers))
            rows.append((outage, statistics.median(times), max(times)))
    finally:
        for w in workers:
            w.send_signal(signal.SIGTERM)
        for w in workers:
            w.wait()
        controller.send_signal(signal.SIGTERM)
        controller.wait()
        shutil.rmtree(root, ignore_errors=True)
    stamp = time.strftime("%Y-%m-%dT%H%M%SZ", time.gmtime())
    lines = [f"# Re-registration after a controller restart ({stamp})", "",
             f"{args.workers} workers on loopback, {args.rounds} restarts per outage; seconds "
             "from the new controller's ready line until every worker is listed (polled every "
             "20 ms, so up to ~0.05 s of each figure is the poll). Bound: 3 s.", "",
             "| outage (s) | median (s) | max (s) |", "|---:|---:|---:|"]
    lines += [f"| {o:g} | {m:.2f} | {x:.2f} |" for o, m, x in rows]
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                       f"reregister-{stamp}.md")
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
