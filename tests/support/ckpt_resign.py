"""Rewrites the checksum attribute of every dataset of a segrank checkpoint, and the
"<name>.checksum" attribute beside every checked attribute, after a test edited it on purpose
(docs/files.md#checkpoints:
checksum = "xxh3_64:<16 hex digits>" of the dataset's bytes, of "s:<text>" or "i:<decimal>" for an
attribute).

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


def attr_checksum(value):
    if isinstance(value, bytes):
        value = value.decode()
    text = ("s:" + value) if isinstance(value, str) else ("i:%d" % int(value))
    b = text.encode()
    return "xxh3_64:%016x" % _lib.XXH3_64bits(b, len(b))


def resign_attrs(obj):
    for name in list(obj.attrs):
        if name.endswith(".checksum") or name + ".checksum" not in obj.attrs:
            continue
        # np.bytes_: a fixed-length string, as segrank writes (a str would be a variable-length
        # one, which segrank refuses to read: docs/files.md#checkpoints).
        obj.attrs[name + ".checksum"] = np.bytes_(attr_checksum(obj.attrs[name]))


def resign(path):
    with h5py.File(path, "r+") as f:
        resign_attrs(f)

        def visit(_name, obj):
            resign_attrs(obj)
            if isinstance(obj, h5py.Dataset):
                obj.attrs["checksum"] = np.bytes_(checksum(obj[()]))

        f.visititems(visit)


if __name__ == "__main__":
    for p in sys.argv[1:]:
        resign(p)
