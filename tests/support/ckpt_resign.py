"""Rewrites the checksum attribute of every dataset of a segrank checkpoint after a test edited it
on purpose (docs/files.md#checkpoints: checksum = "xxh3_64:<16 hex digits>" of the dataset's bytes).

Usage: python3 tests/support/ckpt_resign.py CKPT.h5 [...]
Tests that inject values (NaN parameters, moments) call it so that the load reaches the check they
test instead of stopping at the checksum. Needs h5py, numpy and libxxhash (through ctypes).
"""
import ctypes
import sys

import h5py
import numpy as np

_lib = ctypes.CDLL("libxxhash.so.0")
_lib.XXH3_64bits.restype = ctypes.c_uint64
_lib.XXH3_64bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]


def checksum(data):
    b = np.ascontiguousarray(data).tobytes()
    return "xxh3_64:%016x" % _lib.XXH3_64bits(b, len(b))


def resign(path):
    with h5py.File(path, "r+") as f:

        def visit(_name, obj):
            if isinstance(obj, h5py.Dataset):
                obj.attrs["checksum"] = checksum(obj[()])

        f.visititems(visit)


if __name__ == "__main__":
    for p in sys.argv[1:]:
        resign(p)
