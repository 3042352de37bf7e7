#!/usr/bin/env python3
"""What measuring the gradient noise scale costs, from accumulus_engine_bench's
JSON (noise_scale_bench.cc), as Markdown.

Usage: noise_report.py BENCH.json COMMIT

The cost measured directly (BM_NoiseMeasurementPerWindow: the first
micro-batch's squared gradient norm, the two extra values on the window's one
host read, the estimator's update) is divided by each split's window without
the measurement (BM_WindowNoise/.../noise:0, median); the whole windows with
and without it are listed beside, as the check that nothing else was added.
"""
import json
import sys

TARGET = 0.01  # of step time, at every split (issue #16)


def medians(report):
    """{benchmark name without the aggregate suffix: the median's entry}"""
    out = {}
    for b in report["benchmarks"]:
        if b.get("aggregate_name") == "median":
            out[b["run_name"]] = b
    return out


def cv(report, run_name):
    for b in report["benchmarks"]:
        if b.get("run_name") == run_name and b.get("aggregate_name") == "cv":
            return b["real_time"]
    return None


def seconds(entry):
    scale = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}[entry["time_unit"]]
    return entry["real_time"] * scale


def main():
    path, commit = sys.argv[1], sys.argv[2]
    report = json.load(open(path))
    by_name = medians(report)
    context = report["context"]
    print(f"# Gradient noise scale: what its measurement costs ({context['date']}, commit {commit})")
    print()
    print(f"Machine: {context.get('num_cpus')} CPUs, {context.get('blas', 'BLAS unknown')}; "
          f"global batch 256, the thread split the trainer measures. Raw: `{path.split('/')[-1]}`.")
    print()
    print("| model | split | window, off (median) | window, on (median) | measurement per window "
          "| overhead | target |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    worst = 0.0
    for model in ("mlp", "cnn", "charlm"):
        direct = by_name.get(f"BM_NoiseMeasurementPerWindow/{model}/real_time")
        if direct is None:
            continue
        cost = seconds(direct)
        for micro in (64, 16, 4):
            off = by_name.get(f"BM_WindowNoise/{model}/micro:{micro}/noise:0/real_time")
            on = by_name.get(f"BM_WindowNoise/{model}/micro:{micro}/noise:1/real_time")
            if off is None or on is None:
                continue
            overhead = cost / seconds(off)
            worst = max(worst, overhead)
            print(f"| {model} | {micro} × {256 // micro} | {seconds(off) * 1e3:.1f} ms | "
                  f"{seconds(on) * 1e3:.1f} ms | {cost * 1e6:.0f} µs | {overhead * 100:.2f}% | "
                  f"< {TARGET * 100:.0f}% |")
    print()
    print(f"Largest overhead: {worst * 100:.2f}% ({'met' if worst < TARGET else 'NOT met'}). "
          "At 256 × 1 on one rank nothing is measured and nothing is added.")
    return 0 if worst < TARGET else 1


if __name__ == "__main__":
    sys.exit(main())
