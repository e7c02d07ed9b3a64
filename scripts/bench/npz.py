"""TpuGraphs npz files, read and written with numpy (docs/files.md): the ranking targets of a graph,
its measured runtimes, and the row slices the real-data cases write as new graphs."""

import os
import zipfile
import zlib

try:
    import numpy as np
except ImportError:  # a clear message and exit 1 instead of a traceback
    import sys

    raise SystemExit(
        f"{os.path.basename(sys.argv[0])}: error: numpy is not installed for {sys.executable} "
        "(Debian: apt-get install python3-numpy, as scripts/install_deps.sh does; the benchmark "
        "scripts run with /usr/bin/python3)"
    )

from .common import BenchError

# What numpy raises on a file that is not a readable npz (a truncated archive, a damaged member, an
# npy header it cannot parse, pickled data).
_READ_ERRORS = (OSError, EOFError, ValueError, zipfile.BadZipFile, zlib.error)


def read_npz(path, names=None, optional=()):
    """{member name (without .npy): numpy array} of an npz file: every member, or only `names` (each
    required) and those of `optional` it has. Raises BenchError naming the file for an unreadable
    file, a missing member, a member that is not an npy array, or pickled (object) data."""
    try:
        z = np.load(path, allow_pickle=False)
    except _READ_ERRORS as e:
        raise BenchError(f"cannot read npz '{path}': {e}")
    if not isinstance(z, np.lib.npyio.NpzFile):
        raise BenchError(f"cannot read npz '{path}': an npy file, not an npz archive")
    with z:
        keys = list(z.files) if names is None else list(names)
        missing = [k for k in keys if k not in z.files]
        if missing:
            raise BenchError(f"npz '{path}': no member '{missing[0]}' (members: {z.files})")
        keys += [k for k in optional if k in z.files and k not in keys]
        try:
            return {k: z[k] for k in keys}
        except _READ_ERRORS as e:
            raise BenchError(f"cannot read npz '{path}': {e}")


def write_npz(path, members):
    """Writes {name: array} as a compressed npz (numpy.savez_compressed), to "<path>.tmp" first and
    then renamed over `path` (its folder is created)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        np.savez_compressed(f, **members)
    os.replace(tmp, path)


def int64_values(member, where):
    """The values of an 8-byte integer array (config_runtime: ns) as a flat list of Python ints.
    Raises BenchError naming `where` for any other dtype."""
    if member.dtype.kind not in "iu" or member.dtype.itemsize != 8:
        raise BenchError(f"{where}: expected int64, got {member.dtype.str}")
    return member.reshape(-1).tolist()


def npz_rows(member):
    """The rows (axis 0) of an array as bytes objects (C order): equal bytes, equal rows."""
    return [member[r].tobytes() for r in range(member.shape[0])]


def config_groups(feat, where):
    """The groups of identical config rows (axis 0) of a config array (tile config_feat, layout
    node_config_feat): lists of row indices, in the order of their first row. Rows compare by value,
    -0 == +0, as config_groups in sampling/dedupe.h and tune's config key. Raises BenchError naming
    `where` for a non-numeric or 0-d array."""
    if feat.dtype.kind not in "fiu" or feat.ndim == 0:
        raise BenchError(f"{where}: unexpected config array {feat.dtype.str} {feat.shape}")
    groups = {}
    for j in range(feat.shape[0]):
        groups.setdefault(tuple(feat[j].ravel().tolist()), []).append(j)
    return list(groups.values())


def take_rows(member, rows, where):
    """Rows (axis 0, repeats allowed, in the given order) of an array. Raises BenchError naming
    `where` for an index outside [0, rows of member)."""
    idx = np.asarray(rows, dtype=np.intp)
    n = member.shape[0] if member.ndim else 0
    if idx.size and (idx.min() < 0 or idx.max() >= n):
        raise BenchError(f"{where}: row index {int(idx.max())} outside the array's {n} rows")
    return member[idx]


def npz_targets(path):
    """Ranking targets of one graph, as segrank computes them: config_runtime as floats; tile
    (with config_runtime_normalizers): runtime / max(1, normalizer)."""
    m = read_npz(path, ["config_runtime"], optional=["config_runtime_normalizers"])
    runtime = int64_values(m["config_runtime"], path)
    if "config_runtime_normalizers" in m:
        norm = int64_values(m["config_runtime_normalizers"], path)
        return [float(r) / float(max(1, n)) for r, n in zip(runtime, norm)]
    return [float(r) for r in runtime]


def npz_runtimes(path):
    """config_runtime of one graph (ns) as a list of ints."""
    return int64_values(read_npz(path, ["config_runtime"])["config_runtime"], path)


def list_graphs(split_dir):
    """Sorted graph names (file names without .npz) of one split folder."""
    if not os.path.isdir(split_dir):
        raise BenchError(f"no graphs in '{split_dir}'")
    return sorted(f[:-4] for f in os.listdir(split_dir) if f.endswith(".npz"))
