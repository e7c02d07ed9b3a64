// Layout config rows read in column blocks (docs/gst.md#inference): the readers return the same
// bytes as the full rows, score_graph holds one block of K x a few segments' configurable nodes,
// and the block size changes what is held, never the scores.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <vector>

#include "data/graph_store.h"
#include "gnn/core/check.h"
#include "gst/gst.h"
#include "gst/inference_budget.h"
#include "tests/gst/gst_test_util.h"
#include "tests/gst/store_test_util.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"

namespace segrank::test {

namespace {

// Graphs of 480-500 nodes with 60 configs and 30 configurable nodes (3 or 4 per 60-node
// segment), every node with an array shape (for the layout byte features).
TinyLayoutSpec columns_spec() {
    TinyLayoutSpec spec;
    spec.min_nodes = 480;
    spec.max_nodes = 500;
    spec.configs = 60;
    spec.config_nodes = 30;
    spec.shapes = true;
    return spec;
}

// One graph of `spec` packed into dir/store/train.h5 with chunks of `chunk_bytes` (a few config
// rows per chunk, so a column read spans several chunks).
std::filesystem::path write_store(const std::filesystem::path& dir, const TinyLayoutSpec& spec,
                                  int64_t chunk_bytes) {
    std::filesystem::create_directories(dir / "store");
    const std::filesystem::path path = dir / "store" / "train.h5";
    CollectionId id = CollectionId::parse("layout:xla:random");
    id.split = Split::kTrain;
    GraphStoreOptions opt;
    opt.chunk_bytes = chunk_bytes;
    GraphStoreWriter w(path, id, dir, opt);
    w.add(tiny_layout_graph("cols_0", 0, spec));
    w.finish();
    return path;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

// Columns `cols` of rows `rows` gathered from the full rows of `src`: [rows, cols, 18].
std::vector<int8_t> columns_of_full_rows(const GraphSource& src, const std::vector<int64_t>& rows,
                                         const std::vector<int32_t>& cols) {
    const int64_t nc = src.info(0).num_config_nodes;
    std::vector<int8_t> full(rows.size() * static_cast<size_t>(nc * kLayoutConfigDim));
    src.read_layout_config_rows(0, rows, full);
    std::vector<int8_t> out;
    for (size_t r = 0; r < rows.size(); ++r)
        for (int32_t c : cols)
            for (int64_t d = 0; d < kLayoutConfigDim; ++d)
                out.push_back(
                    full[(r * static_cast<size_t>(nc) + static_cast<size_t>(c)) * kLayoutConfigDim +
                         static_cast<size_t>(d)]);
    return out;
}

}  // namespace

TEST_CASE(
    "config columns read from a store, a graph held in memory and the default reader equal the "
    "full rows' columns") {
    const std::filesystem::path dir = scratch_dir("gst_config_columns_read");
    const GraphStore store(write_store(dir, columns_spec(), 2000), LabelPolicy::kRequirePositive);
    const CountingSource counting(store);  // the GraphSource default (whole rows, then columns)
    const Normalizer norm = normalizer_of(store);
    Model model(tiny_model_config(Task::kLayout, norm.output_dim()));
    PrepareOptions in_memory = tiny_prepare_options(60);
    in_memory.stream = false;
    const auto gm = prepare_graph(entry_of(store), norm, model, in_memory);
    REQUIRE(gm->held != nullptr);
    // Rows in no order, one repeated, across several 3-row chunks; columns not contiguous.
    const std::vector<int64_t> rows = {41, 2, 17, 2, 59, 0, 30};
    const std::vector<int32_t> cols = {0, 3, 4, 17, 29};
    const std::vector<int8_t> want = columns_of_full_rows(store, rows, cols);
    for (const GraphSource* src : {static_cast<const GraphSource*>(&store),
                                   static_cast<const GraphSource*>(&counting), gm->source}) {
        std::vector<int8_t> got(want.size(), 9);
        src->read_layout_config_columns(0, rows, cols, got);
        CHECK(got == want);
    }
}

TEST_CASE(
    "score_graph holds one column block of config rows, and the block size changes no score "
    "bit") {
    const std::filesystem::path dir = scratch_dir("gst_config_columns_score");
    const GraphStore store(write_store(dir, columns_spec(), 2000), LabelPolicy::kRequirePositive);
    const Normalizer norm = normalizer_of(store);
    for (bool bytes : {false, true}) {
        ModelConfig mc = tiny_model_config(Task::kLayout, norm.output_dim());
        mc.layout_bytes = bytes;
        Model model(mc);
        model.params().initialize(7);
        const auto g = prepare_graph(entry_of(store), norm, model, tiny_prepare_options(60));
        REQUIRE(g->num_segments() >= 8);
        // The most configurable nodes of one segment: what a block of one segment holds per config.
        int64_t seg_cols = 0;
        for (int32_t s = 0; s < g->segment_table.num_segments(); ++s)
            seg_cols = std::max<int64_t>(
                seg_cols, static_cast<int64_t>(g->segment_table.config_index(s).size()));
        const int64_t k = static_cast<int64_t>(g->configs.size());
        for (int64_t memory_mb : {kDefaultInferenceMemoryMb, kMinInferenceMemoryMb})
            for (bool dedupe : {true, false}) {
                INFO("layout_bytes=", bytes, " memory_mb=", memory_mb, " dedupe_rows=", dedupe);
                GstOptions opt = tiny_gst_options();
                opt.dedupe_rows = dedupe;
                const InferenceBudget budget = inference_budget(memory_mb, -1);
                InferenceChunk whole = inference_chunk(model, opt, 256, 16384, budget);
                InferenceChunk single = whole;
                single.block_bytes = 1;  // every segment read alone
                InferenceStats sw, ss;
                const std::vector<float> a =
                    score_graph(model, *g, g->configs, whole, opt, budget.cache_bytes, &sw);
                const std::vector<float> b =
                    score_graph(model, *g, g->configs, single, opt, budget.cache_bytes, &ss);
                CHECK(same_bits(a, b));
                CHECK(ss.chunks == sw.chunks);
                CHECK(ss.column_blocks > sw.column_blocks);
                // Never the K x nc x 18 bytes of whole rows: one segment's columns per config.
                CHECK(ss.max_config_row_bytes <= k * seg_cols * kLayoutConfigDim);
                CHECK(ss.max_config_row_bytes < k * g->num_config_nodes * kLayoutConfigDim / 4);
                CHECK(sw.max_config_row_bytes <=
                      std::max(whole.block_bytes, k * seg_cols * kLayoutConfigDim));
            }
    }
}

TEST_SUITE("hostile") {
    TEST_CASE("config columns out of range or out of order are refused naming the graph") {
        const std::filesystem::path dir = scratch_dir("gst_config_columns_bad");
        const GraphStore store(write_store(dir, columns_spec(), 2000),
                               LabelPolicy::kRequirePositive);
        const Normalizer norm = normalizer_of(store);
        Model model(tiny_model_config(Task::kLayout, norm.output_dim()));
        const auto g = prepare_graph(entry_of(store), norm, model, tiny_prepare_options(60));
        ConfigBatch b;
        const std::vector<int64_t> cfgs = {1, 2};
        CHECK_THROWS_WITH_AS(load_config_columns(*g, cfgs, std::vector<int32_t>{4, 3}, b),
                             doctest::Contains("not increasing"), Error);
        CHECK_THROWS_WITH_AS(load_config_columns(*g, cfgs, std::vector<int32_t>{0, 30}, b),
                             doctest::Contains("out of range [0, 30)"), Error);
        std::vector<int8_t> out(2 * kLayoutConfigDim);
        CHECK_THROWS_WITH_AS(store.read_layout_config_columns(0, std::vector<int64_t>{0},
                                                              {std::vector<int32_t>{0, 30}}, out),
                             doctest::Contains("out of range [0, 30)"), Error);
        // A block that misses one of the segment's configurable nodes is not silently read.
        load_config_columns(*g, cfgs, std::vector<int32_t>{}, b);
        SegmentInputBuffers buf;
        int32_t dep = 0;
        while (g->segment_table.config_index(dep).empty()) ++dep;
        CHECK_THROWS_WITH_AS(make_segment_input(*g, dep, b, cfgs, buf),
                             doctest::Contains("is not in the loaded column block"), Error);
    }
}

}  // namespace segrank::test
