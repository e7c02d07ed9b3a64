// Every number of the module_tuning_data_layout.pb fixture, the worked feature
// example of node 660 and the optional SHA-256 cross-check hashes.
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <set>
#include <vector>

#include "data/hlo/featurizer.h"
#include "tests/hlo/hlo_test_util.h"

using namespace segrank;

namespace {

const hlo::ModuleTuning& layout_module(const std::filesystem::path& data) {
    const auto& f = test::fixture(data, "module_tuning_data_layout.pb");
    REQUIRE(f.kind == hlo::TuningFileKind::kModuleTuningData);
    REQUIRE(f.modules.size() == 1);
    return f.modules[0];
}

const LayoutGraph& layout_graph(const std::filesystem::path& data) {
    static std::optional<LayoutGraph> g;
    if (!g) {
        auto res = hlo::featurize_layout(layout_module(data), "module_tuning_data_layout.pb");
        REQUIRE(res.graph.has_value());
        g = std::move(*res.graph);
    }
    return *g;
}

}  // namespace

TEST_CASE("layout fixture module: name, fingerprint, 143 computations with the entry last") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto& mt = layout_module(data);
    CHECK(mt.module.name == "main__.10904");
    CHECK(mt.module.entry_computation_name == "main__.10904");
    CHECK(mt.fingerprint == 1647297092728839203ull);
    REQUIRE(mt.module.computations.size() == 143);
    CHECK(mt.module.computations.back().id == 2985);
    CHECK(mt.module.computations.back().instructions.size() == 2661);
    for (const auto& c : mt.module.computations) CHECK_FALSE(c.is_fusion_computation);
    CHECK(hlo::detect_task(mt) == Task::kLayout);
}

TEST_CASE("layout fixture graph: 3163 nodes, 143 roots, 5112 deduplicated edges, sorted, u > v") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const LayoutGraph& g = layout_graph(data);
    CHECK(g.num_nodes() == 3163);
    CHECK(g.num_edges() == 5112);
    int roots = 0;
    for (int64_t u = 0; u < g.num_nodes(); ++u) roots += g.node_feat.at(u, 0) == 1.0f ? 1 : 0;
    CHECK(roots == 143);
    for (int32_t op : g.node_opcode) CHECK(op != 0);
    const std::vector<int64_t> first(g.edge_index.begin(), g.edge_index.begin() + 8);
    CHECK(first == std::vector<int64_t>{2, 0, 2, 1, 5, 3, 5, 4});
    CHECK(g.edge_index[g.edge_index.size() - 2] == 3162);
    CHECK(g.edge_index.back() == 3161);
    for (int64_t e = 0; e < g.num_edges(); ++e) {
        CHECK(g.edge_index[2 * e] > g.edge_index[2 * e + 1]);
        if (e > 0) {
            const auto prev = std::make_pair(g.edge_index[2 * e - 2], g.edge_index[2 * e - 1]);
            CHECK(prev < std::make_pair(g.edge_index[2 * e], g.edge_index[2 * e + 1]));
        }
    }
}

TEST_CASE(
    "layout fixture: operand dedup removes 117 edges and 170 call edges come from the listed "
    "callers") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto& m = layout_module(data).module;
    int64_t raw_operand_edges = 0, distinct_operand_edges = 0, repeating = 0;
    std::map<std::string, int64_t> call_edges;
    for (const auto& c : m.computations)
        for (const auto& ins : c.instructions) {
            raw_operand_edges += static_cast<int64_t>(ins.operand_ids.size());
            std::set<int64_t> d(ins.operand_ids.begin(), ins.operand_ids.end());
            distinct_operand_edges += static_cast<int64_t>(d.size());
            repeating += d.size() < ins.operand_ids.size() ? 1 : 0;
            call_edges[ins.opcode] += static_cast<int64_t>(ins.called_computation_ids.size());
        }
    CHECK(repeating == 101);
    int64_t calls = 0;
    for (const auto& [op, k] : call_edges) calls += k;
    CHECK(calls == 170);
    CHECK(raw_operand_edges + calls == 5229);
    CHECK(distinct_operand_edges + calls == 5112);
    CHECK(call_edges["reduce"] == 87);
    CHECK(call_edges["all-reduce"] == 67);
    CHECK(call_edges["reduce-window"] == 3);
    CHECK(call_edges["sort"] == 1);
    CHECK(call_edges["while"] == 6);
    CHECK(call_edges["select-and-scatter"] == 6);
}

TEST_CASE("layout fixture node_splits are the while body/cond boundaries then n") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    CHECK(layout_graph(data).node_splits ==
          std::vector<int64_t>{0, 449, 453, 467, 471, 498, 502, 3163});
}

TEST_CASE(
    "layout fixture: 62 configurable nodes (53 convolution, 9 reshape), first 443, last 3143") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const LayoutGraph& g = layout_graph(data);
    REQUIRE(g.num_config_nodes() == 62);
    CHECK(g.node_config_ids.front() == 443);
    CHECK(g.node_config_ids.back() == 3143);
    CHECK(std::is_sorted(g.node_config_ids.begin(), g.node_config_ids.end()));
    int conv = 0, reshape = 0, in_entry = 0;
    for (int64_t id : g.node_config_ids) {
        conv += g.node_opcode[static_cast<size_t>(id)] == 26 ? 1 : 0;
        reshape += g.node_opcode[static_cast<size_t>(id)] == 75 ? 1 : 0;
        in_entry += id >= 502 ? 1 : 0;  // the entry computation is the last segment [502, 3163)
    }
    CHECK(conv == 53);
    CHECK(reshape == 9);
    CHECK(in_entry == 59);
}

TEST_CASE(
    "layout fixture runs: 122 runs, 10 errors at the listed indices, 112 kept, runtime range") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto& mt = layout_module(data);
    REQUIRE(mt.runs.size() == 122);
    std::vector<size_t> errors;
    for (size_t r = 0; r < mt.runs.size(); ++r)
        if (mt.runs[r].error) {
            errors.push_back(r);
            CHECK(mt.runs[r].compute_time_ns == 0);
        }
    CHECK(errors == std::vector<size_t>{6, 15, 67, 70, 88, 100, 106, 109, 117, 120});
    CHECK(mt.runs[0].is_default);
    CHECK(mt.runs[0].compute_time_ns == 910903932);

    const LayoutGraph& g = layout_graph(data);
    CHECK(g.num_configs() == 112);
    CHECK(g.node_config_feat.size() == 112u * 62u * 18u);
    CHECK(*std::min_element(g.config_runtime.begin(), g.config_runtime.end()) == 910876401);
    CHECK(*std::max_element(g.config_runtime.begin(), g.config_runtime.end()) == 925642328);
    CHECK(g.config_runtime.front() == 910903932);
    std::set<std::vector<int8_t>> distinct;
    const size_t per = 62 * 18;
    for (size_t j = 0; j < 112; ++j)
        distinct.insert(std::vector<int8_t>(
            g.node_config_feat.begin() + static_cast<std::ptrdiff_t>(j * per),
            g.node_config_feat.begin() + static_cast<std::ptrdiff_t>((j + 1) * per)));
    CHECK(distinct.size() == 91);
    std::set<int> values(g.node_config_feat.begin(), g.node_config_feat.end());
    CHECK(values == std::set<int>{-1, 0, 1, 2, 3, 4});
}

TEST_CASE("worked example: layout node 660 (convolution.1043, bf16[2,96,96,96,32]) features") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const LayoutGraph& g = layout_graph(data);
    std::array<float, kNodeFeatDim> e{};
    e[15] = 1;
    e[21] = 2;
    e[22] = 96;
    e[23] = 96;
    e[24] = 96;
    e[25] = 32;
    e[27] = 322;
    e[28] = 56623104;
    e[37] = e[38] = e[39] = 3;
    e[43] = 9;
    e[44] = 27;
    for (int group = 45; group < 85; group += 8) {  // stride, pad low/high, window/base dilation
        e[group] = e[group + 1] = e[group + 2] = 1;
        e[group + 6] = 3;
        e[group + 7] = 1;
    }
    e[92] = 3;
    e[93] = 0;
    e[94] = 4;
    e[95] = 1;
    e[96] = 2;
    e[97] = 3;
    e[99] = 3;
    e[100] = 4;
    e[101] = 0;
    e[102] = 1;
    e[103] = 2;
    e[105] = 0;
    e[106] = 4;
    e[107] = e[108] = 1;
    for (int s : {112, 116, 120, 124, 128, 132}) e[s] = 1;
    e[134] = 4;
    e[135] = 3;
    e[136] = 2;
    e[137] = 1;
    e[138] = 0;
    CHECK(g.node_opcode[660] == 26);
    for (int k = 0; k < kNodeFeatDim; ++k) {
        CAPTURE(k);
        CHECK(g.node_feat.at(660, k) == e[static_cast<size_t>(k)]);
    }
}

TEST_CASE("layout fixture arrays match the SHA-256 cross-check hashes") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const LayoutGraph& g = layout_graph(data);
    CHECK(test::sha256_prefix16(g.node_feat.data(), static_cast<size_t>(g.node_feat.size()) * 4) ==
          "b3d0c74e4be8f6df");
    CHECK(test::sha256_prefix16(g.edge_index.data(), g.edge_index.size() * 8) ==
          "067d96c1a1e47f20");
    std::vector<uint8_t> ops(g.node_opcode.begin(), g.node_opcode.end());
    CHECK(test::sha256_prefix16(ops.data(), ops.size()) == "c547cb5bcab0f852");
    std::vector<float> cfg(g.node_config_feat.begin(), g.node_config_feat.end());
    CHECK(test::sha256_prefix16(cfg.data(), cfg.size() * 4) == "d0f9d5baab6250ca");
}
