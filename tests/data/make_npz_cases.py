"""Writes valid and malformed npz files for tests/data/malformed_npz_test.cpp.

usage: make_npz_cases.py OUT_DIR
Zips are assembled byte by byte so that CRCs, methods, sizes and names can be corrupted at will.
"""
import io
import random
import struct
import sys
import zlib

import numpy as np

out = sys.argv[1]


def npy(arr):
    b = io.BytesIO()
    np.save(b, arr)
    return b.getvalue()


def write_zip(path, entries):
    """entries: list of dicts name, data, method (0/8/other), crc (override), cut (bytes dropped
    from the end of the stored/compressed data), size (uncompressed size claimed in the headers)."""
    body = bytearray()
    central = bytearray()
    for e in entries:
        data = e["data"]
        crc = e.get("crc", zlib.crc32(data) & 0xFFFFFFFF)
        method = e.get("method", 0)
        if method == 8:
            c = zlib.compressobj(6, zlib.DEFLATED, -15)
            comp = c.compress(data) + c.flush()
        else:
            comp = data
        comp = comp[: len(comp) - e.get("cut", 0)]
        name = e["name"].encode()
        off = len(body)
        size = e.get("size", len(data))  # uncompressed size claimed by both headers
        body += (
            struct.pack(
                "<IHHHHHIIIHH",
                0x04034B50,
                20,
                0,
                method,
                0,
                0x21,
                crc,
                len(comp),
                size,
                len(name),
                0,
            )
            + name
            + comp
        )
        central += (
            struct.pack(
                "<IHHHHHHIIIHHHHHII",
                0x02014B50,
                20,
                20,
                0,
                method,
                0,
                0x21,
                crc,
                len(comp),
                size,
                len(name),
                0,
                0,
                0,
                0,
                0,
                off,
            )
            + name
        )
    eocd = struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, len(entries), len(entries), len(central), len(body), 0
    )
    with open(path, "wb") as f:
        f.write(bytes(body) + bytes(central) + eocd)


def tile_arrays():
    nf = np.arange(2 * 140, dtype="<f4").reshape(2, 140) / 7
    return {
        "node_feat": nf,
        "node_opcode": np.array([63, 2], dtype="u1"),
        "edge_index": np.array([[1, 0]], dtype="<i8"),
        "config_feat": np.arange(3 * 24, dtype="<f4").reshape(3, 24),
        "config_runtime": np.array([5, 7, 6], dtype="<i8"),
        "config_runtime_normalizers": np.array([5, 5, 5], dtype="<i8"),
    }


def layout_arrays():
    cfg = np.full((2, 2, 18), -1, dtype="<f4")
    cfg[0, 0, :3] = [0, 1, 2]
    cfg[1, 1, :2] = [4, 5]
    return {
        "node_feat": np.ones((4, 140), dtype="<f4"),
        "node_opcode": np.array([1, 26, 75, 26], dtype="u1"),
        "edge_index": np.array([[1, 0], [2, 1], [3, 2]], dtype="<i8"),
        "node_config_ids": np.array([1, 3], dtype="<i8"),
        "node_config_feat": cfg,
        "config_runtime": np.array([100, 90], dtype="<i8"),
        "node_splits": np.array([[0, 2, 4]], dtype="<i8"),
    }


def entries(arrays, method=0, **over):
    """over: key -> dict of entry overrides, or raw npy bytes under 'data'."""
    res = []
    for k, v in arrays.items():
        e = {"name": k + ".npy", "data": npy(v), "method": method}
        e.update(over.get(k, {}))
        res.append(e)
    return res


def case(name, arrays, method=0, **over):
    write_zip(f"{out}/{name}.npz", entries(arrays, method, **over))


def with_(base, **changes):
    a = dict(base)
    for k, v in changes.items():
        if v is None:
            del a[k]
        else:
            a[k] = v
    return a


T, L = tile_arrays(), layout_arrays()
case("tile_ok", T)
case("tile_ok_deflate", T, method=8)
case("layout_ok", L, method=8)

full = io.BytesIO()
np.savez(full, **T)
open(f"{out}/truncated_zip.npz", "wb").write(full.getvalue()[: len(full.getvalue()) * 6 // 10])
case("truncated_member", T, method=8, edge_index={"cut": 20})
case("bad_crc", T, config_feat={"crc": 0x12345678})
case("unknown_method", T, config_feat={"method": 77})
case("bad_magic", T, node_feat={"data": b"XXNUMPY" + npy(T["node_feat"])[7:]})
case("unknown_dtype", with_(T, config_feat=T["config_feat"].astype("<c8")))
case("big_endian", with_(T, node_feat=T["node_feat"].astype(">f4")))
case("object_dtype", T, node_feat={"data": npy(np.array([1, "a"], dtype=object))})
case("payload_short", T, config_runtime={"data": npy(T["config_runtime"])[:-8]})
case("shape_mismatch", with_(T, node_feat=np.ones((3, 140), dtype="<f4")))
case("edge_out_of_range", with_(T, edge_index=np.array([[1, 5]], dtype="<i8")))
case("negative_runtime", with_(T, config_runtime=np.array([5, -3, 6], dtype="<i8")))
nan = T["node_feat"].copy()
nan[1, 7] = np.nan
case("nan_feature", with_(T, node_feat=nan))
case("missing_key", with_(T, config_runtime_normalizers=None))
dup = entries(T)
dup.append({"name": "edge_index.npy", "data": npy(np.array([[0, 1]], dtype="<i8"))})
write_zip(f"{out}/duplicate_key.npz", dup)
bad_cfg = L["node_config_feat"].copy()
bad_cfg[1, 0, 4] = 7
case("config_out_of_range", with_(L, node_config_feat=bad_cfg))
frac = L["node_config_feat"].copy()
frac[0, 1, 2] = 2.5
case("config_not_integral", with_(L, node_config_feat=frac))
case(
    "empty_graph",
    with_(
        T,
        node_feat=np.zeros((0, 140), dtype="<f4"),
        node_opcode=np.zeros(0, dtype="u1"),
        edge_index=np.zeros((0, 2), "<i8"),
    ),
)
case("opcode_out_of_range", with_(T, node_opcode=np.array([63, 130], dtype="u1")))
case("config_ids_not_increasing", with_(L, node_config_ids=np.array([3, 1], dtype="<i8")))
case("splits_bad_end", with_(L, node_splits=np.array([[0, 2, 3]], dtype="<i8")))
case("zero_runtime_train", with_(L, config_runtime=np.array([100, 0], dtype="<i8")))


def npy_header(descr, shape):
    """The v1.0 preamble numpy writes (padded to a multiple of 64 bytes), for any claimed shape."""
    text = "{'descr': '%s', 'fortran_order': False, 'shape': %s, }" % (descr, repr(tuple(shape)))
    pad = -(10 + len(text) + 1) % 64
    text = (text + " " * pad + "\n").encode()
    return b"\x93NUMPY\x01\x00" + struct.pack("<H", len(text)) + text


# Zip headers that lie (issue R-4): edge_index claims |i1 (M, 2), i.e. len(header) + 2M bytes in
# both zip headers, while the deflate stream holds the header and 4 KiB; the CRC is the short
# payload's. The claimed size must be refused before anything of that size is allocated.
for label, m in (("1e8", 10**8), ("2e9", 2 * 10**9)):
    hdr = npy_header("|i1", (m, 2))
    case(
        "lying_size_" + label,
        T,
        method=8,
        edge_index={"data": hdr + bytes(4096), "size": len(hdr) + 2 * m},
    )
# Within the ratio bound, but not once widened: edge_index claims |i1 (10^7, 2), 2*10^7 bytes, from
# a deflate stream of 40 KB of random bytes (the 1032:1 check passes); read as int64 it would need
# 1.6*10^8 bytes, more than the 40 KB can expand to.
hdr = npy_header("|i1", (10**7, 2))
case(
    "lying_widened",
    T,
    method=8,
    edge_index={"data": hdr + random.Random(1).randbytes(40000), "size": len(hdr) + 2 * 10**7},
)
# Within the ratio bound once widened too: edge_index claims |i1 (10^6, 2), 1.6*10^7 bytes as int64,
# from 20 KB of random bytes (at most 2*10^7 at 1032:1). Only the machine's bound (lowered by
# SEGRANK_MAX_INPUT_BYTES in the test) refuses it before the reader allocates.
hdr = npy_header("|i1", (10**6, 2))
case(
    "lying_within_ratio",
    T,
    method=8,
    edge_index={"data": hdr + random.Random(2).randbytes(20000), "size": len(hdr) + 2 * 10**6},
)
# A shape whose element count overflows 64 bits (each entry fits; the product does not).
case(
    "shape_overflow",
    T,
    config_feat={"data": npy_header("<f4", (999999999999999999, 999999999999999999))},
)
# An npy v1 preamble whose header length field is 0 (found by the npz fuzz target: the 12 bytes read
# first were copied into a 10-byte buffer).
case("header_len_0", T, node_opcode={"data": b"\x93NUMPY\x01\x00\x00\x00" + bytes([63, 2])})
