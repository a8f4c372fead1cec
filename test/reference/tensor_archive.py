"""Tensor archive: the exchange format of docs/models.md.

A directory with two files:
  index.json  {"tensors": [{"name": str, "dtype": "f32"|"f64"|"i32",
                            "shape": [int, ...], "offset": int}, ...]}
  data.bin    raw little-endian element data; each tensor's bytes start at
              its "offset" (in bytes) and are row-major (C order).
Scalars have shape [].

The writer places each tensor at the next 64-byte-aligned offset (readers
must use "offset", not assume the tensors are packed). Only numpy + stdlib.
"""

import json
import os

import numpy as np

DTYPES = {"f32": np.dtype("<f4"), "f64": np.dtype("<f8"), "i32": np.dtype("<i4")}
ALIGN = 64


def _dtype_name(dt):
    dt = np.dtype(dt)
    for name, npdt in DTYPES.items():
        if dt.kind == npdt.kind and dt.itemsize == npdt.itemsize:
            return name
    raise TypeError("tensor archive supports f32, f64, i32; got %s" % dt)


def _to_numpy(value):
    # torch tensors (without importing torch here), numpy arrays, Python scalars.
    if hasattr(value, "detach"):
        value = value.detach().cpu().numpy()
    arr = np.asarray(value)
    if arr.dtype == np.float64 or arr.dtype == np.float32 or arr.dtype == np.int32:
        return arr
    raise TypeError("unsupported dtype %s (convert to f32/f64/i32 first)" % arr.dtype)


def write(path, tensors):
    """Writes `tensors` (a mapping or list of (name, array) pairs; values are
    numpy arrays, torch tensors or numpy scalars) to directory `path`, in the
    given order."""
    items = list(tensors.items()) if hasattr(tensors, "items") else list(tensors)
    os.makedirs(path, exist_ok=True)
    index, offset, seen = [], 0, set()
    with open(os.path.join(path, "data.bin"), "wb") as f:
        for name, value in items:
            if name in seen:
                raise ValueError("duplicate tensor name %r" % name)
            seen.add(name)
            arr = _to_numpy(value)
            dname = _dtype_name(arr.dtype)
            data = np.ascontiguousarray(arr, dtype=DTYPES[dname]).tobytes()
            offset = (offset + ALIGN - 1) // ALIGN * ALIGN
            f.seek(offset)
            f.write(data)
            index.append({"name": name, "dtype": dname,
                          "shape": [int(d) for d in arr.shape], "offset": offset})
            offset += len(data)
        f.truncate(offset)
    with open(os.path.join(path, "index.json"), "w") as f:
        json.dump({"tensors": index}, f, indent=1)
        f.write("\n")


def read(path):
    """Returns an insertion-ordered dict name -> numpy array (native byte order)."""
    with open(os.path.join(path, "index.json")) as f:
        index = json.load(f)["tensors"]
    with open(os.path.join(path, "data.bin"), "rb") as f:
        blob = f.read()
    out = {}
    for t in index:
        name, dt, shape, off = t["name"], DTYPES[t["dtype"]], t["shape"], t["offset"]
        if name in out:
            raise ValueError("%s: duplicate tensor name %r" % (path, name))
        count = 1
        for d in shape:
            if d < 0:
                raise ValueError("%s: %r has negative dim" % (path, name))
            count *= d
        nbytes = count * dt.itemsize
        if off < 0 or off + nbytes > len(blob):
            raise ValueError("%s: %r [%d, %d) is outside data.bin (%d bytes)"
                             % (path, name, off, off + nbytes, len(blob)))
        arr = np.frombuffer(blob, dtype=dt, count=count, offset=off)
        out[name] = arr.reshape(shape).astype(dt.newbyteorder("="), copy=True)
    return out


if __name__ == "__main__":
    import sys
    if len(sys.argv) != 2:
        sys.exit("usage: tensor_archive.py DIR   (lists the archive)")
    for name, a in read(sys.argv[1]).items():
        desc = ("%.6g" % a) if a.ndim == 0 else "absmax %.4g" % (np.abs(a).max() if a.size else 0)
        print("%-32s %-4s %-16s %s" % (name, _dtype_name(a.dtype), list(a.shape), desc))
