"""Writes data files compressed and archived as the tools themselves write
them, for accumulus's readers to read back as the plain files beside them
(tests/crosscheck/compressed_files_test.cc).

  compressed_files.py DIR

Plain files: x.npy, y.npy (classification), t.csv, x.idx, y.idx,
tokens.bin. Each other file holds one of them, and DIR/cases lists them,
one per line: "KIND PLAIN_PATH PLAIN_LABELS FILE LABELS ARRAY LABELS_ARRAY"
("-" for an empty field), the job's data kind, the plain files and the
compressed ones.
"""
import bz2
import gzip
import io
import lzma
import os
import shutil
import struct
import sys
import tarfile
import zipfile

import numpy as np
import zstandard


def idx(array):
    """An IDX file: two zero bytes, the type (0x08 unsigned byte), the
    number of dimensions, each a big-endian uint32, then the data."""
    header = struct.pack(">BBBB", 0, 0, 0x08, array.ndim)
    header += b"".join(struct.pack(">I", d) for d in array.shape)
    return header + array.astype(np.uint8).tobytes()


class Unseekable(io.RawIOBase):
    """A stream zipfile cannot seek back in: it writes each member's sizes
    in a data descriptor after the data (as `zip` does writing to a pipe)."""

    def __init__(self, sink):
        self.sink = sink

    def writable(self):
        return True

    def write(self, b):
        return self.sink.write(b)


def main(out):
    rng = np.random.default_rng(4)
    x = rng.normal(size=(40, 3)).astype(np.float32)
    y = (x[:, 0] > 0).astype(np.int64) + (x[:, 2] > 0.5)
    images = rng.integers(0, 256, size=(40, 4, 4), dtype=np.uint8)
    path = lambda name: os.path.join(out, name)
    np.save(path("x.npy"), x)
    np.save(path("y.npy"), y)
    with open(path("t.csv"), "w") as f:
        f.write("a,b,c,label\n")
        for row, label in zip(x, y):
            f.write(",".join(repr(float(v)) for v in row) + ",%d\n" % label)
    with open(path("x.idx"), "wb") as f:
        f.write(idx(images))
    with open(path("y.idx"), "wb") as f:
        f.write(idx(y))
    tokens = rng.integers(0, 200, size=5000, dtype=np.uint8)
    tokens[::37] = 0
    tokens.tofile(path("tokens.bin"))

    cases = []
    # numpy's own archives: Keras' mnist.npz layout deflated, savez's
    # positional keys stored.
    np.savez_compressed(path("keras.npz"), x_train=x, y_train=y, x_test=x[:5], y_test=y[:5])
    cases.append("npy x.npy y.npy keras.npz - x_train y_train")
    np.savez(path("positional.npz"), x, y)
    cases.append("npy x.npy y.npy positional.npz positional.npz arr_0 arr_1.npy")
    np.savez(path("one.npz"), x)
    cases.append("npy x.npy y.npy one.npz y.npy - -")

    # gzip, as Python's gzip module and MNIST's files are; two members.
    for name in ("x.npy", "y.npy", "t.csv", "x.idx", "y.idx", "tokens.bin"):
        with open(path(name), "rb") as f, gzip.open(path(name + ".gz"), "wb") as g:
            shutil.copyfileobj(f, g)
    with open(path("t.csv"), "rb") as f:
        text = f.read()
    with open(path("t2.csv.gz"), "wb") as g:
        g.write(gzip.compress(text[:100]) + gzip.compress(text[100:]))
    cases.append("npy x.npy y.npy x.npy.gz y.npy.gz - -")
    cases.append("csv t.csv - t.csv.gz - - -")
    cases.append("csv t.csv - t2.csv.gz - - -")
    cases.append("idx x.idx y.idx x.idx.gz y.idx.gz - -")
    cases.append("tokens tokens.bin - tokens.bin.gz - - -")

    # bzip2, xz and zstd, as Python's bz2 and lzma modules and zstandard
    # (pandas' .bz2, .xz and .zst) write them; several streams (pbzip2,
    # `xz -T`, zstd's frames) and xz's SHA-256 check.
    for name in ("x.npy", "y.npy", "x.idx", "y.idx", "tokens.bin"):
        with open(path(name), "rb") as f:
            data = f.read()
        with bz2.open(path(name + ".bz2"), "wb") as g:
            g.write(data)
        with lzma.open(path(name + ".xz"), "wb") as g:
            g.write(data)
        with open(path(name + ".zst"), "wb") as g:
            g.write(zstandard.ZstdCompressor(write_checksum=True).compress(data))
    with open(path("t.csv.bz2"), "wb") as g:
        g.write(bz2.compress(text[:100]) + bz2.compress(text[100:]))
    with open(path("t.csv.xz"), "wb") as g:
        g.write(lzma.compress(text[:100], check=lzma.CHECK_SHA256) + lzma.compress(text[100:]))
    with open(path("t.csv.zst"), "wb") as g:
        # Streamed: no sizes in the frames' headers, as to a pipe.
        compressor = zstandard.ZstdCompressor()
        with compressor.stream_writer(g, closefd=False) as w:
            w.write(text[:100])
            w.flush(zstandard.FLUSH_FRAME)
            w.write(text[100:])
    for kind, plain, labels in (("npy", "x.npy", "y.npy"), ("idx", "x.idx", "y.idx")):
        for ending in ("bz2", "xz", "zst"):
            cases.append("%s %s %s %s.%s %s.%s - -" % (kind, plain, labels, plain, ending, labels,
                                                      ending))
    for ending in ("bz2", "xz", "zst"):
        cases.append("csv t.csv - t.csv.%s - - -" % ending)
        cases.append("tokens tokens.bin - tokens.bin.%s - - -" % ending)

    # zip archives of one file: deflated, stored, zip64, with a data
    # descriptor, with a directory entry beside the file.
    with zipfile.ZipFile(path("t.csv.zip"), "w", zipfile.ZIP_DEFLATED) as z:
        z.write(path("t.csv"), "t.csv")
    cases.append("csv t.csv - t.csv.zip - - -")
    with zipfile.ZipFile(path("tokens.zip"), "w", zipfile.ZIP_STORED) as z:
        z.writestr("data/", b"")
        z.write(path("tokens.bin"), "data/tokens.bin")
    cases.append("tokens tokens.bin - tokens.zip - - -")
    with zipfile.ZipFile(path("x64.zip"), "w", zipfile.ZIP_DEFLATED) as z:
        with open(path("x.idx"), "rb") as f, z.open("x.idx", "w", force_zip64=True) as m:
            shutil.copyfileobj(f, m)
    cases.append("idx x.idx y.idx x64.zip y.idx - -")
    with open(path("streamed.zip"), "wb") as f:
        with zipfile.ZipFile(Unseekable(f), "w", zipfile.ZIP_DEFLATED) as z:
            z.writestr("t.csv", text)
    cases.append("csv t.csv - streamed.zip - - -")

    # tar archives of one file, as Python's tarfile writes them (pandas'
    # .tar, .tar.gz...): ustar, GNU and pax (a long, non-ASCII name),
    # plain and compressed, with a directory entry beside the file.
    long_name = "données/" + "d" * 120 + "/t.csv"
    for archive, mode, form, member in (
            ("t.tar", "w", tarfile.USTAR_FORMAT, "data/t.csv"),
            ("t-gnu.tar.gz", "w:gz", tarfile.GNU_FORMAT, long_name),
            ("t-pax.tar.xz", "w:xz", tarfile.PAX_FORMAT, long_name)):
        with tarfile.open(path(archive), mode, format=form) as t:
            t.add(out, arcname="data", recursive=False)
            t.add(path("t.csv"), arcname=member)
        cases.append("csv t.csv - %s - - -" % archive)
    with tarfile.open(path("x.tar.bz2"), "w:bz2") as t:
        t.add(path("x.npy"), arcname="x.npy")
    cases.append("npy x.npy y.npy x.tar.bz2 y.npy - -")

    # Members compressed with zipfile's other methods: bzip2 and LZMA.
    for method, name in ((zipfile.ZIP_BZIP2, "bzip2"), (zipfile.ZIP_LZMA, "lzma")):
        with zipfile.ZipFile(path("t-%s.zip" % name), "w", method) as z:
            z.writestr("t.csv", text)
        cases.append("csv t.csv - t-%s.zip - - -" % name)
        np.savez(path("xy-%s.npz" % name), x=x, y=y)
        with zipfile.ZipFile(path("xy-%s.npz" % name)) as src:
            members = [(m, src.read(m)) for m in src.namelist()]
        with zipfile.ZipFile(path("xy-%s.npz" % name), "w", method) as z:
            for m, data in members:
                z.writestr(m, data)
        cases.append("npy x.npy y.npy xy-%s.npz - x y" % name)

    with open(path("cases"), "w") as f:
        f.write("\n".join(cases) + "\n")


if __name__ == "__main__":
    main(sys.argv[1])
