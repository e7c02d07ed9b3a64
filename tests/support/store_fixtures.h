// Fixtures of the store and reader tests: a small chain layout graph, an h5py edit of a store, the
// message of a segrank::Error.
#pragma once
#include <doctest/doctest.h>

#include <cstdint>
#include <filesystem>
#include <string>

#include "data/graph.h"
#include "gnn/core/check.h"
#include "tests/support/test_paths.h"

namespace segrank::test {

/// n nodes in a chain (edges u -> u-1), two configurable nodes (1 and n-1), c configs with runtimes
/// 100, 101, ... ns; node features i % 97 / 7, opcodes alternating 1 / 26, layout slots cycling
/// -1..5. Named `name`, source `name.npz`.
inline LayoutGraph chain_layout(const std::string& name, int64_t n, int64_t c) {
    LayoutGraph g;
    g.name = name;
    g.source = name + ".npz";
    g.node_feat = Tensor(n, kNodeFeatDim);
    for (int64_t i = 0; i < g.node_feat.size(); ++i)
        g.node_feat[i] = static_cast<float>(i % 97) / 7.0f;
    for (int64_t v = 0; v < n; ++v) g.node_opcode.push_back(v % 2 ? 26 : 1);
    for (int64_t u = 1; u < n; ++u) {
        g.edge_index.push_back(u);
        g.edge_index.push_back(u - 1);
    }
    g.node_config_ids = {1, n - 1};
    for (int64_t j = 0; j < c * 2 * kLayoutConfigDim; ++j)
        g.node_config_feat.push_back(static_cast<int8_t>(j % 7 - 1));
    for (int64_t j = 0; j < c; ++j) g.config_runtime.push_back(100 + j);
    g.node_splits = {0, n};
    return g;
}

/// Python defining rehash(d): sets the chunk_xxh3 attribute of h5py dataset d to the xxh3_64 of
/// each chunk's current rows (libxxhash's XXH3_64bits through ctypes), as the store writer would
/// have: an edit meant to reach the checks behind the checksum (a bad value, a missing chunk) ends
/// with it.
inline constexpr const char* kH5pyRehash =
    "import ctypes; X=ctypes.CDLL('libxxhash.so.0'); X.XXH3_64bits.restype=ctypes.c_uint64; "
    "X.XXH3_64bits.argtypes=[ctypes.c_char_p, ctypes.c_size_t]; "
    "rehash=lambda d: d.attrs.__setitem__('chunk_xxh3', np.array([X.XXH3_64bits(b, len(b)) for b "
    "in (d[i:i+d.chunks[0]].tobytes() for i in range(0, d.shape[0], d.chunks[0]))], '<u8'))";

/// Runs Debian's Python with h5py on the store at `path`, opened read-write as `f` (numpy as np,
/// rehash as kH5pyRehash), executing `code`; the test fails (REQUIRE) when Python does.
inline void edit_with_h5py(const std::filesystem::path& path, const std::string& code) {
    const auto r =
        run_command("/usr/bin/python3 -c \"import h5py, numpy as np; " + std::string(kH5pyRehash) +
                    "; f=h5py.File('" + path.string() + "','r+'); " + code + "; f.close()\"");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
}

/// The message of the segrank::Error that f() throws, or "<no error>".
template <typename F>
std::string error_of(F&& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "<no error>";
}

}  // namespace segrank::test
