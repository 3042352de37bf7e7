"""Writes safetensors files as the safetensors package itself writes them
(safetensors.torch and safetensors.numpy), for accumulus's reader to read
back (tests/crosscheck/array_files_test.cc): every dtype a data set
may hold, BF16 and F16 from torch among them.

  safetensors_files.py DIR

For case I it writes DIR/I.safetensors (tensors "x", the samples, and
"y", the labels or targets; case 0 keeps its labels in DIR/0-labels.
safetensors, a file of one tensor), and what the trainer must make of
them: DIR/I-inputs.f32 and DIR/I-targets.f32, float32 little-endian in C
order (unsigned bytes scaled to [0, 1], as pixels are), and DIR/I-task,
"classification" or "regression". It prints the number of cases.
"""
import os
import sys

import numpy as np
import torch
from safetensors.numpy import save_file as save_numpy
from safetensors.torch import save_file as save_torch

N = 4
CLASSES = np.array([0, 2, 1, 2])


def cases():
    """(tensors, whether torch writes them, the expected inputs, task)."""
    grid = np.arange(N * 3).reshape(N, 3) * 1.5 - 4
    x = torch.tensor(grid, dtype=torch.float32)
    yield {"x": x, "y": torch.tensor(CLASSES)}, True, x.numpy(), "classification"
    bf16 = x.to(torch.bfloat16)
    yield ({"x": bf16, "y": torch.tensor(CLASSES, dtype=torch.int32)}, True,
           bf16.to(torch.float32).numpy(), "classification")
    f16 = x.to(torch.float16)
    yield ({"x": f16, "y": torch.tensor(CLASSES, dtype=torch.uint8)}, True,
           f16.to(torch.float32).numpy(), "classification")
    yield ({"x": grid.astype(np.float64), "y": CLASSES.astype(np.int16)}, False, grid,
           "classification")
    images = (np.arange(N * 2 * 2) * 17).astype(np.uint8).reshape(N, 2, 2)
    yield {"x": images, "y": CLASSES.astype(np.uint64)}, False, images / 255.0, "classification"
    yield {"x": grid > 0, "y": CLASSES.astype(np.int8)}, False, grid > 0, "classification"
    targets = np.stack([grid[:, 0] * 2, grid[:, 1] - 1], axis=1).astype(np.float32)
    yield {"x": grid.astype(np.float32), "y": targets}, False, grid, "regression"


def main(out):
    count = 0
    for i, (tensors, with_torch, inputs, task) in enumerate(cases()):
        path = os.path.join(out, f"{i}.safetensors")
        labels = tensors["y"]
        if i == 0:  # the labels in a file of their own, of one tensor
            save_torch({"labels": labels}, os.path.join(out, "0-labels.safetensors"))
            tensors = {"x": tensors["x"]}
        (save_torch if with_torch else save_numpy)(tensors, path, metadata={"case": str(i)})
        labels = labels.numpy() if with_torch else labels
        np.asarray(inputs, dtype=np.float32).tofile(os.path.join(out, f"{i}-inputs.f32"))
        np.asarray(labels, dtype=np.float32).tofile(os.path.join(out, f"{i}-targets.f32"))
        with open(os.path.join(out, f"{i}-task"), "w") as f:
            f.write(task)
        count += 1
    print(count)


if __name__ == "__main__":
    main(sys.argv[1])
