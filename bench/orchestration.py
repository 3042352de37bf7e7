#!/usr/bin/env python3
"""What the control plane costs a job per step, alone: compare.py's whole
jobs (a real controller and worker on loopback, `accumulus submit --watch`)
without its engine and Python peers, repeated so that the spread shows.

Usage: orchestration.py BIN_DIR COMMIT OUT_MD [REPETITIONS]

For each model and micro-batch of compare.py (global batch 256) it runs
REPETITIONS jobs (default 3) one after another on one controller and worker,
and writes a Markdown table of each run's time between windows, controller +
worker CPU per step, and their sum (orchestration), as shares of the step.
Run it with the Python of the project's torch environment, like compare.py.
"""
import os
import platform
import statistics
import sys
from datetime import datetime, timezone

import compare


def main(bin_dir, commit, out, repetitions=3):
    cluster = compare.Cluster(bin_dir)
    rows = []
    try:
        for model in compare.MODELS:
            for micro in compare.SPLITS:
                runs = [cluster.run_job(model, micro, compare.JOB_WINDOWS[model])
                        for _ in range(repetitions)]
                rows.append((model, micro, runs))
                print(model, micro, file=sys.stderr)
    finally:
        cluster.stop()
    lines = [
        "# Orchestration per step, whole jobs only",
        "",
        "- date: %s, commit: %s, %d CPUs (%s)" % (
            datetime.now(timezone.utc).isoformat(timespec="seconds"), commit, os.cpu_count(),
            platform.processor() or platform.machine()),
        "- `bench/orchestration.py`: compare.py's jobs (global batch 256, a controller and "
        "one worker on loopback, the worker's default --max-event-delay-ms 100), %d runs "
        "of each configuration back to back. Orchestration = time between windows + "
        "controller and worker CPU per step (the scheduler's per-thread nanoseconds), as "
        "shares of the step." % repetitions,
        "",
        "| model | micro × k | job samples/s | between windows | controller + worker CPU | orchestration "
        "(runs) | median | step → watcher p50 |",
        "| --- | --- | ---: | --- | --- | --- | ---: | ---: |",
    ]
    for model, micro, runs in rows:
        total = [r["between_windows"] + r["control_plane_cpu"] for r in runs]
        lines.append("| %s | %d × %d | %.0f | %s | %s | %s | %.2f%% | %.0f ms |" % (
            model, micro, compare.GLOBAL // micro,
            statistics.median(r["samples_per_second"] for r in runs),
            " · ".join("%.2f%%" % (100 * r["between_windows"]) for r in runs),
            " · ".join("%.2f%%" % (100 * r["control_plane_cpu"]) for r in runs),
            " · ".join("%.2f%%" % (100 * t) for t in total),
            100 * statistics.median(total),
            1e3 * statistics.median(r["step_latency_p50"] for r in runs)))
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    if len(sys.argv) not in (4, 5):
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]) if len(sys.argv) == 5 else 3)
