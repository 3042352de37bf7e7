"""Writes .npy files as NumPy writes them, for accumulus's reader to read
back (tests/crosscheck/array_files_test.cc): every numeric dtype, both byte
orders, C and Fortran order, images and regression targets.

  numpy_files.py DIR

For case I it writes DIR/I-samples.npy and DIR/I-labels.npy, and what the
trainer must make of them: DIR/I-inputs.f32 and DIR/I-targets.f32, float32
little-endian in C order (unsigned bytes scaled to [0, 1], as pixels are),
and DIR/I-task, "classification" or "regression". It prints the number of
cases.
"""
import sys

import numpy as np

N = 4
CLASSES = np.array([0, 2, 1, 2])


def cases():
    grid = np.arange(N * 3).reshape(N, 3) * 1.5 - 4
    yield grid.astype("<f4"), CLASSES, "classification"
    yield grid.astype(">f8"), CLASSES.astype(">i4"), "classification"
    yield np.asfortranarray(grid.astype("<i2")), CLASSES.astype("|u1"), "classification"
    yield np.asfortranarray(grid.astype(">f4")), CLASSES.astype("<u8"), "classification"
    yield grid.astype("<f2"), CLASSES.astype("<f4"), "classification"
    yield (grid > 0), CLASSES.astype(">i8"), "classification"
    yield np.arange(N * 2 * 2, dtype="|u1").reshape(N, 2, 2) * 17, CLASSES, "classification"
    yield np.arange(N, dtype="<u8") * 3, CLASSES.astype("<i2"), "classification"
    yield (np.asfortranarray(np.arange(N * 2 * 3, dtype="<i8").reshape(N, 2, 3) - 5),
           CLASSES.astype("|i1"), "classification")
    targets = np.asfortranarray(np.arange(N * 2, dtype="<f8").reshape(N, 2) / 4 - 1)
    yield grid.astype("<f4"), targets, "regression"
    yield grid.astype("<f4"), targets[:, 0].astype(">f2"), "regression"


def main():
    out = sys.argv[1]
    count = 0
    for i, (samples, labels, task) in enumerate(cases()):
        np.save(f"{out}/{i}-samples.npy", samples)
        np.save(f"{out}/{i}-labels.npy", labels)
        inputs = samples.astype(np.float64)
        if samples.dtype == np.uint8:
            inputs = inputs / 255
        inputs.astype("<f4").tofile(f"{out}/{i}-inputs.f32")
        labels.astype("<f4").tofile(f"{out}/{i}-targets.f32")
        with open(f"{out}/{i}-task", "w") as f:
            f.write(task)
        count += 1
    print(count)


if __name__ == "__main__":
    main()
