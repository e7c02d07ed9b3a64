// A packed store corrupted where HDF5's Fletcher32 cannot see it (16-bit words turned 0x0000 ->
// 0xFFFF) is refused by `segrank train` and `segrank stats`, naming the store, the dataset and the
// chunk (docs/files.md#hdf5-store), instead of training to the end on wrong data.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "tests/support/test_paths.h"

using segrank::test::run_command;
using segrank::test::scratch_dir;
using segrank::test::segrank_binary;
using segrank::test::source_dir;
using segrank::test::sq;

namespace {

// Python (h5py, numpy): in store argv[1], dataset argv[2] of the first graph, chunk 0 (stored as
// is), turns the zero 16-bit words of the first 5 matching values to 0xFFFF: node_feat values 1.0
// (0x3F800000 -> 0x3F80FFFF = 1.0078), or edge_index values (the 6 high bytes of small int64s).
// Prints "<graph> <rows>".
constexpr const char* kCorrupt = R"(import sys, h5py, numpy as np
path, name = sys.argv[1], sys.argv[2]
f = h5py.File(path, 'r')
g = sorted(f['graphs'])[0]
d = f['graphs'][g][name]
a = d[...].reshape(-1)
info = d.id.get_chunk_info(0)
rows = d.shape[0]
assert d.compression is None and info.size >= a.nbytes
f.close()
idx = np.flatnonzero(a == 1.0)[:5] if name == 'node_feat' else np.arange(5)
assert len(idx) == 5
b = bytearray(open(path, 'rb').read())
es = a.dtype.itemsize
for i in idx:
    at = info.byte_offset + int(i) * es
    for w in range(0, es, 2):
        if b[at + w] == 0 and b[at + w + 1] == 0:
            b[at + w] = b[at + w + 1] = 0xFF
open(path, 'wb').write(b)
print(g, rows)
)";

}  // namespace

TEST_CASE(
    "a packed store with words turned 0x0000 to 0xFFFF is refused by train and stats naming the "
    "chunk" *
    doctest::test_suite("hostile")) {
    namespace fs = std::filesystem;
    const fs::path dir = scratch_dir("cli_store_hash");
    const std::string bin = segrank_binary().string();
    auto ok = [](const segrank::test::CommandResult& r) {
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
    };
    ok(run_command(bin + " synth --out " + sq((dir / "syn").string()) +
                   " --collections layout --graphs 4 --nodes 30:60 --configs 8 --splits "
                   "0.5,0.25,0.25 --seed 1 -q"));
    const fs::path clean = dir / "clean", h5 = dir / "h5";
    ok(run_command(bin + " pack " + sq((dir / "syn").string()) + " --out " + sq(clean.string())));
    std::ofstream(dir / "corrupt.py") << kCorrupt;
    const fs::path store = h5 / "layout_xla_random_train.h5";
    // Corrupts `dataset` in a fresh copy of the clean stores; returns "<graph> <rows>".
    auto corrupt = [&](const std::string& dataset) {
        fs::remove_all(h5);
        fs::copy(clean, h5);
        const auto r = run_command("/usr/bin/python3 " + sq((dir / "corrupt.py").string()) + " " +
                                   sq(store.string()) + " " + dataset);
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        return r.output.substr(0, r.output.find('\n'));
    };
    auto expected = [&](const std::string& graph_rows, const std::string& dataset) {
        const size_t sp = graph_rows.find(' ');
        return store.string() + ":/graphs/" + graph_rows.substr(0, sp) + "/" + dataset +
               ": checksum mismatch in chunk 0 (rows 0.." +
               std::to_string(std::stoll(graph_rows.substr(sp + 1)) - 1) +
               "): the file is corrupt (stored xxh3_64 ";
    };
    const std::string train =
        bin + " train --config " + sq((source_dir() / "configs/tiny.toml").string()) +
        " --set data.store=\"hdf5\" --set data.root=" + sq(h5.string()) +
        " --set train.threads=1 --set train.eval_every=0 --set train.steps=2" +
        " --set train.run_dir=" + sq((dir / "run").string());

    const std::string nf = expected(corrupt("node_feat"), "node_feat");
    auto r = run_command(train);
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find(nf) != std::string::npos);
    CHECK_FALSE(fs::exists(dir / "run"));

    const std::string ei = expected(corrupt("edge_index"), "edge_index");
    r = run_command(bin + " stats " + sq(h5.string()));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find(ei) != std::string::npos);
    r = run_command(train);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find(ei) != std::string::npos);
}
