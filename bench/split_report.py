#!/usr/bin/env python3
"""Markdown summary of engine_split_bench's JSON (Google Benchmark output).

Usage: split_report.py RESULTS.json COMMIT > RESULTS.md
One table per model: each split's median samples/s and window peak, with and
without activation checkpointing, and an ASCII chart of the peak.
"""
import json
import re
import sys

NAME = re.compile(r"BM_Window/(\w+)/micro:(\d+)/checkpoint:(\d)")


def main(path, commit):
    with open(path) as f:
        results = json.load(f)
    context = results["context"]
    rows = {}
    for b in results["benchmarks"]:
        if b.get("aggregate_name") != "median":
            continue
        m = NAME.match(b["run_name"])
        if not m:
            continue
        model, micro, checkpoint = m.group(1), int(m.group(2)), m.group(3) == "1"
        rows.setdefault(model, []).append(
            (micro, int(b["accumulation"]), checkpoint, b["items_per_second"], b["window_peak_bytes"],
             f'{int(b["intra_op_threads"])} + {int(b["blas_threads"])}')
        )
    print("# Engine: one window of global batch 256 per split")
    print()
    print(f"- date: {context['date']}")
    print(f"- commit: {commit}")
    print(f"- machine: {context['num_cpus']} CPUs, {context['host_name']}")
    print(
        f"- threads: the split a trainer owning all {context.get('cores')} cores measures for "
        f"each model and micro-batch (intra-op + BLAS threads); {context.get('blas')}"
    )
    print("- models: mlp 784-1024-1024-10; cnn two conv+BatchNorm blocks on 3×32×32; "
          "charlm 2 layers, d_model 128, 4 heads, sequences of 128. SGD with momentum.")
    print("- peak: all live tensors at the window's peak (parameters, gradients, optimizer state, "
          "the data set, one micro-batch's activations)")
    for model, entries in rows.items():
        largest = max(e[4] for e in entries) or 1
        print()
        print(f"## {model}")
        print()
        print("| micro × accumulation | checkpointing | threads | samples/s | window peak | |")
        print("| --- | --- | --- | ---: | ---: | --- |")
        for micro, accumulation, checkpoint, rate, peak, threads in sorted(
            entries, key=lambda e: (e[2], -e[0])
        ):
            bar = "#" * max(1, round(peak / largest * 30))
            print(
                f"| {micro} × {accumulation} | {'on' if checkpoint else 'off'} | {threads} | {rate:.0f} "
                f"| {peak / 1048576:.1f} MiB | `{bar}` |"
            )


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
