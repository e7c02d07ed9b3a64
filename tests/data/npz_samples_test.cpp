// The public TpuGraphs npz samples (docs/files.md#real-data) read through NpzReader and
// load_tile_npz.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdio>

#include "data/graph.h"
#include "data/npz.h"
#include "tests/support/test_paths.h"

using namespace segrank;

TEST_CASE("tile samples (ZIP64 local headers, deflate) load with the published counts") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    struct Expect {
        const char* stem;
        int64_t n, m, c;
    };
    const Expect expect[] = {{"0a1c5dcfa9f1f4ebcc1282a1d1ca8ecb", 2, 1, 32},
                             {"0a3585c3e686065389227fa374175e48", 52, 55, 1282},
                             {"0a8a2b247d7a20b9dcab1daf50066a4d", 15, 15, 807},
                             {"0abaea94d7b0a1c1f1b0bd23b73ce38c", 21, 21, 52},
                             {"0ac539372cc77cc6791794b369b984e1", 65, 70, 2951}};
    for (const auto& e : expect) {
        CAPTURE(e.stem);
        const auto path = data / "npz_samples/tile_xla_test" / (std::string(e.stem) + ".npz");
        const TileGraph g = load_tile_npz(path, LabelPolicy::kAllowTestZeros);
        CHECK(g.name == e.stem);
        CHECK(g.num_nodes() == e.n);
        CHECK(g.num_edges() == e.m);
        CHECK(g.num_configs() == e.c);
        CHECK(g.config_feat.rows() == e.c);
        CHECK(std::all_of(g.config_runtime.begin(), g.config_runtime.end(),
                          [](int64_t v) { return v == 0; }));
        CHECK(std::all_of(g.config_runtime_normalizers.begin(), g.config_runtime_normalizers.end(),
                          [](int64_t v) { return v == 1; }));
        // Test-split zeros are refused when positive runtimes are required.
        CHECK_THROWS_WITH_AS(load_tile_npz(path, LabelPolicy::kRequirePositive),
                             doctest::Contains("key 'config_runtime'"), Error);
    }
}

TEST_CASE("npz sample headers report the observed dtypes") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    NpzReader z(data / "npz_samples/tile_xla_test/0a1c5dcfa9f1f4ebcc1282a1d1ca8ecb.npz");
    CHECK(z.header("node_feat").dtype == DType::kF4);
    CHECK(z.header("node_opcode").dtype == DType::kU1);
    CHECK(z.header("edge_index").dtype == DType::kI8);
    CHECK(z.header("config_feat").shape == std::vector<int64_t>{32, 24});
    CHECK(z.header("node_feat").header_bytes == 128);
    const auto edges = z.read_i64("edge_index", nullptr);
    CHECK(edges == std::vector<int64_t>{1, 0});
}

// Reference values for the derived fortran-order file, printed once with
//   /usr/bin/python3 -c "import numpy as np; d=np.load(F); a=d['node_feat']; print(a.shape,
//   a.flags['F_CONTIGUOUS'], a[0,:6].tolist(), a[1,:6].tolist(), a[371,-3:].tolist(),
//   a.sum(0)[:4])"
TEST_CASE("derived layout file: fortran-order node_feat (372, 70) is transposed on read") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    NpzReader z(data / "npz_samples/layout_derived/layout_xla_alexnet_cleaned_derived.npz");
    const NpyHeader h = z.header("node_feat");
    CHECK(h.fortran_order);
    CHECK(h.shape == std::vector<int64_t>{372, 70});
    std::vector<int64_t> shape;
    const std::vector<float> nf = z.read_f32("node_feat", &shape);
    REQUIRE(nf.size() == 372u * 70u);
    // Compare every element with numpy (computed in-test so nothing is hard-coded).
    const auto dump = test::scratch_dir("fortran") / "nf.bin";
    const auto r = test::run_command(
        "/usr/bin/python3 -c \"import numpy as np; d=np.load('" +
        (data / "npz_samples/layout_derived/layout_xla_alexnet_cleaned_derived.npz").string() +
        "'); a=d['node_feat']; assert a.flags['F_CONTIGUOUS']; "
        "np.ascontiguousarray(a, dtype='<f4').tofile('" +
        dump.string() + "')\"");
    REQUIRE_MESSAGE(r.exit_code == 0, r.output);
    std::vector<float> ref(nf.size());
    FILE* f = std::fopen(dump.c_str(), "rb");
    REQUIRE(f);
    CHECK(std::fread(ref.data(), sizeof(float), ref.size(), f) == ref.size());
    std::fclose(f);
    CHECK(nf == ref);
    // The untouched keys of the derived file.
    CHECK(z.read_i64("node_splits", &shape) == std::vector<int64_t>{0, 324, 372});
    CHECK(shape == std::vector<int64_t>{1, 3});
    CHECK(z.header("edge_index").shape == std::vector<int64_t>{597, 2});
    CHECK(z.header("node_config_feat").shape == std::vector<int64_t>{47712, 26, 10});
    const auto rt = z.read_i64("config_runtime", nullptr);
    CHECK(*std::min_element(rt.begin(), rt.end()) == 79542164);
    CHECK(*std::max_element(rt.begin(), rt.end()) == 428789334);
    // Its reduced widths are rejected by the typed loader with a clear message.
    CHECK_THROWS_WITH_AS(load_layout_npz(z.path(), LabelPolicy::kRequirePositive),
                         doctest::Contains("key 'node_feat'"), Error);
}
