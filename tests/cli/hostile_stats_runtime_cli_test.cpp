// Runtimes that cannot be (negative) and hidden labels out of place (0 ns in a labelled split) in
// `segrank stats` end to end (ctest label `hostile`): docs/files.md#hdf5-store.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "data/graph.h"
#include "data/npy.h"
#include "data/npz.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

// Rewrites the npz `path` with config_runtime[index] = value, bypassing the writer's validation
// (which refuses a negative runtime), as a hand-made or damaged file would hold it.
void set_runtime_unchecked(const fs::path& path, size_t index, int64_t value) {
    const fs::path tmp = path.string() + ".new.npz";
    {
        segrank::NpzReader in(path);
        segrank::NpzWriter out(tmp, segrank::NpzCompression::kStored);
        for (const std::string& key : in.keys()) {
            std::vector<int64_t> shape;
            if (segrank::dtype_is_float(in.header(key).dtype)) {
                const std::vector<float> v = in.read_f32(key, &shape);
                out.add_f32(key, shape, v);
                continue;
            }
            std::vector<int64_t> v = in.read_i64(key, &shape);
            if (key == "config_runtime") v.at(index) = value;
            if (key == "node_opcode") {
                const std::vector<uint8_t> u(v.begin(), v.end());
                out.add_u8(key, shape, u);
            } else {
                out.add_i64(key, shape, v);
            }
        }
        out.finish();
    }
    fs::rename(tmp, path);
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE(
        "segrank stats refuses a negative runtime naming file, graph and config, and warns "
        "about 0 ns") {
        const fs::path dir = scratch_dir("hostile_stats_negative_runtime");
        write_tiny_layout_collection(dir / "data");
        const fs::path npz = dir / "data/npz/layout/xla/random/train/tiny_train_1.npz";
        segrank::LayoutGraph g =
            segrank::load_layout_npz(npz, segrank::LabelPolicy::kAllowTestZeros);
        g.config_runtime[5] = 0;
        segrank::save_layout_npz(g, npz);
        const std::string bin = sq(segrank_binary().string());
        const auto zero = run_command(bin + " stats " + sq((dir / "data").string()));
        INFO(zero.output);
        CHECK(zero.exit_code == 0);
        CHECK(contains_text(zero.output, "segrank stats: warning: " + npz.string() +
                                             ": key 'config_runtime': config 5 has a runtime of "
                                             "0 ns (1 of "));
        // Negative: impossible, an error in every split, for npz files and stores alike.
        set_runtime_unchecked(npz, 5, -3);
        const auto neg = run_command(bin + " stats " + sq((dir / "data").string()));
        INFO(neg.output);
        CHECK(neg.exit_code == 1);
        CHECK(contains_text(neg.output, npz.string() + ": key 'config_runtime': index 5 value -3 "
                                                       "is negative"));
        CHECK_FALSE(contains_text(neg.output, "warning"));
        CHECK_FALSE(contains_text(neg.output, "tiny_train_0"));  // no partial table
    }
}
