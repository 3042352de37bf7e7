#!/usr/bin/env python3
"""What the thread-split logic buys on this LibTorch: the engine's window on
every model and split, on each fixed split of this machine's cores between
LibTorch's intra-op pool and the BLAS, and on the split the trainer measures
for itself (worker/engine/thread_split.h). Run with the torch environment's
python (bench/run.sh's $PYTHON):

  thread_splits.py BIN_DIR COMMIT OUT_PREFIX     writes OUT_PREFIX.json and .md

Fixed splits run as ACCUMULUS_BENCH_THREADS=INTRA,BLAS; each is one process
over all configurations, and the splits take turns over ROUNDS rounds so a
neighbour's burst on a shared machine spreads over all of them; each
configuration keeps its median.
"""
import json
import os
import re
import statistics
import subprocess
import sys
from datetime import datetime, timezone

ROUNDS = 3
NAME = re.compile(r"BM_Window/(\w+)/micro:(\d+)/checkpoint:0")


def splits(cores):
    fixed = {(cores, cores), (cores, 1), (1, cores)}
    return sorted(fixed, reverse=True)


def run(bin_dir, split):
    env = dict(os.environ)
    env.pop("ACCUMULUS_BENCH_THREADS", None)
    if split is not None:
        env["ACCUMULUS_BENCH_THREADS"] = "%d,%d" % split
    out = subprocess.run(
        [os.path.join(bin_dir, "accumulus_engine_bench"), "--benchmark_filter=^BM_Window/",
         "--benchmark_min_time=0.5", "--benchmark_format=json"],
        env=env, check=True, capture_output=True, text=True).stdout
    result = json.loads(out)
    rates = {}
    for b in result["benchmarks"]:
        m = NAME.match(b["name"])
        if m:
            rates[(m.group(1), int(m.group(2)))] = (
                b["items_per_second"], "%d + %d" % (b["intra_op_threads"], b["blas_threads"]))
    return result["context"], rates


def main(bin_dir, commit, prefix):
    cores = os.cpu_count()
    candidates = splits(cores) + [None]  # None: the trainer's own measurement
    samples = {}
    context = {}
    for _ in range(ROUNDS):
        for split in candidates:
            context, rates = run(bin_dir, split)
            for key, (rate, used) in rates.items():
                samples.setdefault((split, key), []).append((rate, used))
    label = lambda s: "measured" if s is None else "%d + %d" % s
    rows = []
    for key in sorted({k for _, k in samples}, key=lambda k: (k[0], -k[1])):
        row = {"model": key[0], "micro": key[1]}
        for split in candidates:
            got = samples.get((split, key), [])
            row[label(split)] = statistics.median(r for r, _ in got) if got else None
            if split is None and got:
                row["measured_split"] = sorted(u for _, u in got)
        rows.append(row)
    result = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "commit": commit,
              "cores": cores, "blas": context.get("blas"), "rounds": ROUNDS, "rows": rows}
    with open(prefix + ".json", "w") as f:
        json.dump(result, f, indent=2)
    names = [label(s) for s in candidates]
    lines = ["# Thread splits on %s" % result["blas"], "",
             "- date: %s, commit: %s, %d cores; samples/s of the engine's window (global "
             "batch 256), median of %d rounds; intra-op + BLAS threads" % (
                 result["date"], commit, cores, ROUNDS), "",
             "| model | micro | " + " | ".join(names) + " | measured chose | measured ÷ best fixed |",
             "| --- | ---: | " + " | ".join("---:" for _ in names) + " | --- | ---: |"]
    for row in rows:
        best_fixed = max(row[n] for n in names[:-1] if row[n] is not None)
        lines.append("| %s | %d | %s | %s | %.2f |" % (
            row["model"], row["micro"], " | ".join("%.0f" % row[n] for n in names),
            ", ".join(row.get("measured_split", [])), row["measured"] / best_fixed))
    with open(prefix + ".md", "w") as f:
        f.write("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main(*sys.argv[1:4])
