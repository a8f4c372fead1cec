"""Helper of TensorArchiveTest: exercises test/reference/tensor_archive.py.

usage: archive_roundtrip.py REFERENCE_DIR SRC COPY OUT
Reads the archive SRC (written by C++) and writes it back to COPY, then writes
a fixed set of tensors to OUT for the C++ side to check.
"""

import sys

import numpy as np

sys.path.insert(0, sys.argv[1])
import tensor_archive  # noqa: E402

src, copy, out = sys.argv[2:5]
tensor_archive.write(copy, tensor_archive.read(src))
tensor_archive.write(out, [
    ("w", np.arange(6, dtype=np.float32).reshape(2, 3) / np.float32(4) - np.float32(0.5)),
    ("third", np.float64(1.0) / 3),
    ("ids", np.arange(4, dtype=np.int32) * 1000 - 2),
    ("none", np.zeros((3, 0), dtype=np.float64)),
])
