// Run filtering, normalizers and skip/error rules of the tile and layout collections
// (docs/files.md#tile-collection, docs/files.md#layout-collection) on hand-built ModuleTuning
// records.
#include <doctest/doctest.h>

#include "data/hlo/featurizer.h"
#include "gnn/core/check.h"

using namespace segrank;

namespace {

hlo::ModuleTuning one_node_module() {
    hlo::ModuleTuning mt;
    mt.has_module = true;
    mt.module.name = std::string("m");  // (operator=(const char*) trips GCC 12 -Wrestrict)
    hlo::Computation c;
    c.id = 1;
    c.name = std::string("main");
    c.root_id = 5;
    hlo::Instruction i;
    i.id = 5;
    i.opcode = "convolution";
    c.instructions.push_back(i);
    mt.module.computations.push_back(c);
    return mt;
}

hlo::Run tile_run(int64_t ns, bool is_default, bool error = false) {
    hlo::Run r;
    r.kind = Task::kTile;
    r.has_tile_size_config = true;
    r.tile.kernel_bounds = {ns % 7};
    r.compute_time_ns = ns;
    r.has_profile = true;
    r.is_default = is_default;
    r.error = error;
    return r;
}

hlo::Run layout_run(int64_t ns, bool is_default, bool error = false) {
    hlo::Run r;
    r.kind = Task::kLayout;
    r.layout.resize(1);
    r.layout[0].tensors = {{1, 0}, {}};
    r.compute_time_ns = ns;
    r.has_profile = true;
    r.is_default = is_default;
    r.error = error;
    return r;
}

}  // namespace

TEST_CASE(
    "tile runs are kept when error is false and compute_time_ns > 1, normalizer = first kept "
    "default") {
    auto mt = one_node_module();
    mt.runs = {tile_run(1, true), tile_run(500, false, true), tile_run(300, false),
               tile_run(200, true), tile_run(100, true)};
    auto res = hlo::featurize_tile(mt, "t");
    REQUIRE(res.graph);
    CHECK(res.graph->config_runtime == std::vector<int64_t>{300, 200, 100});
    CHECK(res.graph->config_runtime_normalizers == std::vector<int64_t>{200, 200, 200});
    CHECK(res.graph->config_feat.at(0, 0) == static_cast<float>(300 % 7));
}

TEST_CASE(
    "tile modules with < 2 runs or a run without tile_size_config are skipped, no kept default is "
    "an error") {
    auto mt = one_node_module();
    mt.runs = {tile_run(300, true)};
    CHECK_FALSE(hlo::featurize_tile(mt, "t").graph.has_value());
    mt.runs = {tile_run(300, true), tile_run(200, false)};
    mt.runs[1].has_tile_size_config = false;
    auto skipped = hlo::featurize_tile(mt, "t");
    CHECK_FALSE(skipped.graph.has_value());
    CHECK(skipped.skip_reason.find("runs[1]") != std::string::npos);
    mt.runs = {tile_run(300, false), tile_run(200, false), tile_run(100, true, true)};
    CHECK_THROWS_WITH_AS(hlo::featurize_tile(mt, "t.pb"), doctest::Contains("is_default"), Error);
}

TEST_CASE(
    "layout runs keep error-free runs with a profile, config values per node, no default means "
    "skip") {
    auto mt = one_node_module();
    mt.config_index_to_node = {0};
    mt.runs = {layout_run(900, true), layout_run(0, false, true), layout_run(800, false)};
    mt.runs[2].has_profile = true;
    hlo::Run no_profile = layout_run(0, false);
    no_profile.has_profile = false;
    mt.runs.push_back(no_profile);
    auto res = hlo::featurize_layout(mt, "l");
    REQUIRE(res.graph);
    CHECK(res.graph->config_runtime == std::vector<int64_t>{900, 800});
    CHECK(res.graph->node_config_ids == std::vector<int64_t>{0});
    CHECK(res.graph->node_splits == std::vector<int64_t>{0, 1});
    REQUIRE(res.graph->node_config_feat.size() == 36);
    CHECK(res.graph->node_config_feat[0] == 1);
    CHECK(res.graph->node_config_feat[1] == 0);
    CHECK(res.graph->node_config_feat[2] == -1);

    mt.runs[0].is_default = false;
    CHECK_FALSE(hlo::featurize_layout(mt, "l").graph.has_value());
}

TEST_CASE("layout errors: empty config_index_to_node, a kept run with compute_time_ns <= 0") {
    auto mt = one_node_module();
    mt.runs = {layout_run(900, true)};
    mt.runs[0].layout.clear();
    CHECK_THROWS_WITH_AS(hlo::featurize_layout(mt, "l"),
                         doctest::Contains("config_index_to_node is empty"), Error);
    mt = one_node_module();
    mt.config_index_to_node = {0};
    mt.runs = {layout_run(900, true), layout_run(0, false)};
    CHECK_THROWS_WITH_AS(hlo::featurize_layout(mt, "l"), doctest::Contains("compute_time_ns = 0"),
                         Error);
}
