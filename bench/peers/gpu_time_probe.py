#!/usr/bin/env python3
"""Where a small micro-batch's window spends its time on a GPU: issuing
kernels from the host, or running them on the device.

Usage: gpu_time_probe.py [--models mlp,cnn,charlm] [--micros 16,4] [--windows 5]

For the textbook loop of peers/textbook_loop.py (the same models, global
batch 256, fp32) prints one JSON line per model and split:
  window_ms      wall time of one window, to the end of the GPU's work;
  issue_ms       host time to issue one window from an idle GPU, without
                 waiting (what a faster host loop could shorten);
  kernel_ms      the device time of its kernels (torch.profiler), summed;
  gpu_busy       kernel_ms / window_ms.
A window with gpu_busy near 1 is bound by the GPU's own work: no host loop,
in Python or C++, makes it much faster. One with issue_ms near window_ms and
gpu_busy low is bound by launches, which a C++ loop (or CUDA graphs)
shortens.
"""
import argparse
import json
import os
import sys
import time

import torch
from torch import nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from textbook_loop import GLOBAL_BATCH, build  # noqa: E402


def kernel_seconds(prof):
    total_us = 0.0
    for event in prof.key_averages():
        if str(getattr(event, "device_type", "")).endswith("CUDA"):
            total_us += getattr(event, "self_device_time_total",
                                getattr(event, "self_cuda_time_total", 0.0))
    return total_us / 1e6


def probe(model, micro, windows):
    device = torch.device("cuda")
    torch.manual_seed(0)
    net, inputs, targets = build(model)
    net, inputs, targets = net.to(device), inputs.to(device), targets.to(device)
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    k = GLOBAL_BATCH // micro

    def window():
        for b in range(0, GLOBAL_BATCH, micro):
            out = net(inputs[b:b + micro]).float()
            loss = criterion(out.reshape(-1, out.size(-1)), targets[b:b + micro].reshape(-1)) / k
            loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)

    for _ in range(3):
        window()
    torch.cuda.synchronize()
    start = time.perf_counter()
    for _ in range(windows):
        window()
    torch.cuda.synchronize()
    window_seconds = (time.perf_counter() - start) / windows

    issue = []
    for _ in range(windows):
        torch.cuda.synchronize()
        start = time.perf_counter()
        window()
        issue.append(time.perf_counter() - start)
    torch.cuda.synchronize()

    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU,
                                            torch.profiler.ProfilerActivity.CUDA]) as prof:
        for _ in range(2):
            window()
        torch.cuda.synchronize()
    kernels = kernel_seconds(prof) / 2
    return {"model": model, "micro": micro, "accumulation": k,
            "window_ms": window_seconds * 1e3, "issue_ms": sorted(issue)[len(issue) // 2] * 1e3,
            "kernel_ms": kernels * 1e3, "gpu_busy": kernels / window_seconds,
            "gpu": torch.cuda.get_device_name(0), "torch": torch.__version__}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--models", default="mlp,cnn,charlm")
    parser.add_argument("--micros", default="16,4")
    parser.add_argument("--windows", type=int, default=5)
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("gpu_time_probe.py: no CUDA device visible")
    for model in args.models.split(","):
        for micro in (int(m) for m in args.micros.split(",")):
            print(json.dumps(probe(model, micro, args.windows)), flush=True)


if __name__ == "__main__":
    main()
