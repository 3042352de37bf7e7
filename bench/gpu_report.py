#!/usr/bin/env python3
"""The GPU bench as Markdown: engine against the Python textbook loop on the
same GPU, per model, precision and split, with each loop's window peak.

  gpu_report.py ENGINE.jsonl PYTHON.jsonl [NOISE.jsonl] > gpu-bench.md

The engine runs as a job does, micro-batches replayed as CUDA graphs once
warmed up; "eager" is the same loop with graphs off (older results have no
such rows).

Targets (issue 13): at micro-batch <= 16 the engine at >= 1.3x the Python
loop (small micro-batches are launch-bound, which a C++ loop removes); at
256x1 >= 1.0x. The engine's rows measure the gradient noise scale, as a
trainer does; "noise cost" (NOISE.jsonl: accumulus_gpu_bench --noise-cost) is
how much faster the same split runs without that measurement, medians of
runs with and without it in turn (issue 16: <= 1%).
"""
import json
import sys


def load(path, peer=None):
    """{(model, precision, micro): row} of `peer`'s rows (None: every row)"""
    rows = {}
    with open(path) as f:
        for line in f:
            line = line.strip()
            if line.startswith("{"):
                r = json.loads(line)
                if peer is None or r.get("peer") == peer:
                    rows[(r["model"], r["precision"], r["micro"])] = r
    return rows


def noise_cost(row):
    return "–" if row is None else f"{row['cost'] * 100:.1f}%"


def target(micro):
    if micro <= 16:
        return 1.3
    return 1.0 if micro == 256 else None


def main():
    engine, eager = load(sys.argv[1], "engine"), load(sys.argv[1], "engine-eager")
    python = load(sys.argv[2])
    noise = load(sys.argv[3]) if len(sys.argv) > 3 else {}
    gpu = next(iter(engine.values()), {}).get("gpu", "unknown GPU")
    print(f"# GPU bench: {gpu}, torch {next(iter(engine.values()), {}).get('torch', '?')}\n")
    print("| model | precision | split | engine samples/s | eager samples/s | Python samples/s "
          "| engine ÷ Python | eager ÷ Python | target | engine peak MiB | eager peak MiB "
          "| Python peak MiB | noise cost |")
    print("| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | --- | ---: | ---: | ---: | ---: |")

    def rate(row):
        return "–" if row is None else f"{row['samples_per_second']:.0f}"

    def peak(row):
        return "–" if row is None else f"{row['window_peak_bytes'] / 2**20:.1f}"

    def ratio(row, p):
        return None if row is None or p is None else row["samples_per_second"] / p["samples_per_second"]

    for key in sorted(engine, key=lambda k: (k[0], k[1], -k[2])):
        e, g, p = engine[key], eager.get(key), python.get(key)
        split = f"{key[2]}×{256 // key[2]}"
        r, rg, t = ratio(e, p), ratio(g, p), target(key[2])
        verdict = "" if t is None or r is None else f"≥ {t} {'met' if r >= t else 'MISSED'}"
        print(f"| {key[0]} | {key[1]} | {split} | {rate(e)} | {rate(g)} | {rate(p)} "
              f"| {'–' if r is None else f'{r:.2f}'} | {'–' if rg is None else f'{rg:.2f}'} "
              f"| {verdict} | {peak(e)} | {peak(g)} | {peak(p)} | {noise_cost(noise.get(key))} |")


if __name__ == "__main__":
    main()
