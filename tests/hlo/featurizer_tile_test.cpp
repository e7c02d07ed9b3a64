// Every number of the op_tuning_data.pb fixture (TuningData, 15 tile kernels).
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <vector>

#include "data/hlo/featurizer.h"
#include "tests/hlo/hlo_test_util.h"

using namespace segrank;

namespace {

struct TileRow {
    const char* name;
    int comps, nodes, edges, runs, errors, kept;
    int64_t min_rt, max_rt, normalizer;
    int distinct_cfg;
};

// The published per-module facts of the fixture, transcribed.
const TileRow kTable[15] = {
    {"fusion.232", 3, 20, 19, 61, 0, 61, 57188, 390377, 57188, 60},
    {"fusion.191", 5, 31, 32, 581, 2, 579, 137344, 3963794, 151565, 579},
    {"fusion.261", 4, 52, 51, 16, 0, 16, 94192, 346901, 94192, 16},
    {"fusion.209", 5, 56, 58, 16, 0, 16, 46351, 323394, 46351, 16},
    {"fusion.205", 5, 30, 30, 16, 0, 16, 45021, 270678, 45021, 16},
    {"fusion.245", 3, 21, 20, 23, 0, 23, 13411, 70207, 13665, 22},
    {"copy.24", 1, 2, 1, 10, 0, 10, 3872, 33058, 3967, 10},
    {"copy.25", 1, 2, 1, 11, 0, 11, 7310, 32480, 7310, 10},
    {"fusion.181", 2, 7, 6, 5, 0, 5, 1447, 12302, 1447, 5},
    {"fusion.207", 4, 44, 49, 3, 0, 3, 1635, 8987, 1635, 3},
    {"fusion.206", 3, 13, 12, 3, 0, 3, 1244, 8288, 1244, 3},
    {"fusion.250", 2, 10, 9, 2, 0, 2, 598, 951, 598, 2},
    {"reshape.37", 1, 2, 1, 3, 0, 3, 238068, 504700, 270591, 1},
    {"reshape.39", 1, 2, 1, 2, 0, 2, 5664, 5920, 5664, 1},
    {"reshape.38", 1, 2, 1, 2, 0, 2, 4358, 4365, 4358, 1},
};

const hlo::TuningFile& op_file(const std::filesystem::path& data) {
    return test::fixture(data, "op_tuning_data.pb");
}

}  // namespace

TEST_CASE("op_tuning_data.pb is detected as a TuningData with 15 modules, 754 runs, 294 nodes") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto& f = op_file(data);
    CHECK(f.kind == hlo::TuningFileKind::kTuningData);
    REQUIRE(f.modules.size() == 15);
    size_t runs = 0;
    int64_t nodes = 0;
    for (const auto& mt : f.modules) {
        runs += mt.runs.size();
        nodes += mt.module.num_instructions();
        CHECK(mt.config_index_to_node.empty());
        CHECK(hlo::detect_task(mt) == Task::kTile);
        CHECK(std::count_if(mt.runs.begin(), mt.runs.end(),
                            [](const hlo::Run& r) { return r.is_default; }) == 1);
        CHECK(hlo::node_splits(mt.module) == std::vector<int64_t>{0, mt.module.num_instructions()});
    }
    CHECK(runs == 754);
    CHECK(nodes == 294);
}

TEST_CASE(
    "each tile kernel matches its published facts: name, comps, nodes, edges, runs, errors, "
    "runtimes, normalizer") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto& f = op_file(data);
    REQUIRE(f.modules.size() == 15);
    for (size_t i = 0; i < 15; ++i) {
        const TileRow& row = kTable[i];
        const auto& mt = f.modules[i];
        CAPTURE(row.name);
        CHECK(mt.module.name == row.name);
        CHECK(static_cast<int>(mt.module.computations.size()) == row.comps);
        CHECK(static_cast<int>(mt.runs.size()) == row.runs);
        CHECK(std::count_if(mt.runs.begin(), mt.runs.end(),
                            [](const hlo::Run& r) { return r.error; }) == row.errors);
        CHECK(mt.runs.front().is_default);  // "in every module the default run is run 0"
        auto res = hlo::featurize_tile(mt, "op_tuning_data.pb");
        REQUIRE(res.graph.has_value());
        const TileGraph& g = *res.graph;
        CHECK(g.name == row.name);
        CHECK(g.num_nodes() == row.nodes);
        CHECK(g.num_edges() == row.edges);
        CHECK(g.num_configs() == row.kept);
        CHECK(g.node_feat.rows() == row.nodes);
        CHECK(g.node_feat.cols() == kNodeFeatDim);
        CHECK(g.config_feat.rows() == row.kept);
        CHECK(g.config_feat.cols() == kTileConfigDim);
        CHECK(*std::min_element(g.config_runtime.begin(), g.config_runtime.end()) == row.min_rt);
        CHECK(*std::max_element(g.config_runtime.begin(), g.config_runtime.end()) == row.max_rt);
        CHECK(g.config_runtime_normalizers ==
              std::vector<int64_t>(static_cast<size_t>(row.kept), row.normalizer));
        std::set<std::vector<float>> distinct;
        for (int64_t j = 0; j < g.num_configs(); ++j)
            distinct.insert(std::vector<float>(g.config_feat.data() + j * kTileConfigDim,
                                               g.config_feat.data() + (j + 1) * kTileConfigDim));
        CHECK(static_cast<int>(distinct.size()) == row.distinct_cfg);
        for (int32_t op : g.node_opcode) CHECK(op != 0);  // no unknown opcodes
        for (int64_t e = 0; e < g.num_edges(); ++e)
            CHECK(g.edge_index[2 * e] > g.edge_index[2 * e + 1]);
    }
}

TEST_CASE("fusion.191 drops its two error runs (575 and 579), which carry an empty profile") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto& mt = op_file(data).modules.at(1);
    std::vector<size_t> errors;
    for (size_t r = 0; r < mt.runs.size(); ++r)
        if (mt.runs[r].error) {
            errors.push_back(r);
            CHECK(mt.runs[r].compute_time_ns == 0);
        }
    CHECK(errors == std::vector<size_t>{575, 579});
}

TEST_CASE("kernel 0 (fusion.232) has its published opcodes and edges") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    auto res = hlo::featurize_tile(op_file(data).modules.at(0), "op");
    REQUIRE(res.graph);
    const TileGraph& g = *res.graph;
    CHECK(g.node_opcode == std::vector<int32_t>{63, 63, 2,  24, 13, 48, 87, 63, 13, 52,
                                                25, 63, 24, 13, 83, 24, 70, 63, 63, 41});
    CHECK(g.edge_index == std::vector<int64_t>{2,  0, 2,  1,  4,  3,  6,  4,  6,  5,  8,  7,  9,
                                               6,  9, 8,  10, 9,  13, 12, 14, 10, 14, 11, 14, 13,
                                               16, 2, 16, 14, 16, 15, 19, 16, 19, 17, 19, 18});
    // (16,2) links the reduce to its reducer's root and (19,16) the fusion to its fused root.
    CHECK(g.node_feat.at(2, 0) == 1.0f);
    CHECK(g.node_feat.at(16, 0) == 1.0f);
}

TEST_CASE("product slots are 1 for instructions without window, slices, dynamic sizes or padding") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const int kProductSlots[] = {44, 52, 60, 68, 76, 84, 112, 116, 120, 124, 128, 132};
    int checked = 0;
    for (const auto& mt : op_file(data).modules) {
        auto res = hlo::featurize_tile(mt, "op");
        REQUIRE(res.graph);
        int64_t u = 0;
        for (const auto& comp : mt.module.computations)
            for (const auto& ins : comp.instructions) {
                const bool plain = ins.window.empty() && ins.slice_dimensions.empty() &&
                                   ins.dynamic_slice_sizes.empty() && ins.padding_config.empty();
                if (plain) {
                    for (int s : kProductSlots) CHECK(res.graph->node_feat.at(u, s) == 1.0f);
                    ++checked;
                }
                if (ins.shape.dims.empty() && !ins.shape.is_tuple()) {
                    CHECK(res.graph->node_feat.at(u, 27) == 0.0f);
                    CHECK(res.graph->node_feat.at(u, 28) == 1.0f);
                }
                ++u;
            }
    }
    CHECK(checked > 200);
}

TEST_CASE("tile config features use S0: empty bound lists give sum 0 and product 0") {
    hlo::TileSizeConfig t;
    t.output_bounds = {2, 26, 4, 2};
    const auto f = hlo::tile_config_features(t);
    const std::array<float, 24> expected{0, 0, 0,  0,   0, 0, 0, 0, 2, 26, 4, 2,
                                         0, 0, 34, 416, 0, 0, 0, 0, 0, 0,  0, 0};
    CHECK(f == expected);
    CHECK(hlo::tile_config_features(hlo::TileSizeConfig{}) == std::array<float, 24>{});
    hlo::TileSizeConfig big;
    big.kernel_bounds = {1, 2, 3, 4, 5, 6, 7};  // sum/product cover all 7 values, not the first 6
    const auto b = hlo::tile_config_features(big);
    CHECK(b[5] == 6.0f);
    CHECK(b[6] == 28.0f);
    CHECK(b[7] == 5040.0f);
}
