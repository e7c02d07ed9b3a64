// MemoryGraphSource: one graph loaded whole from an npz source and read back through every partial
// read of the GraphSource interface, with the npz source's answers; bad indices, rows, ranges and
// tasks are refused naming the source.
#include "data/memory_graph_source.h"

#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>

#include "data/collection.h"
#include "gnn/core/check.h"
#include "tests/support/test_paths.h"
#include "tests/support/tiny_layout_data.h"
#include "tests/support/tiny_tile_data.h"

namespace segrank::test {
namespace {

namespace fs = std::filesystem;

bool same_tensor(const Tensor& a, const Tensor& b) {
    return a.rows() == b.rows() && a.cols() == b.cols() &&
           std::equal(a.span().begin(), a.span().end(), b.span().begin());
}

// The npz source of the single train graph written under `root`.
NpzGraphSource train_source(const fs::path& root) {
    for (Collection& c : discover_collections(root))
        if (c.id.split == Split::kTrain) return NpzGraphSource(std::move(c));
    throw Error("no train split under " + root.string());
}

}  // namespace

TEST_CASE(
    "a MemoryGraphSource serves every partial read of a layout graph as its npz source does") {
    TinyLayoutSpec spec;
    spec.train_graphs = 1;
    spec.config_nodes = 3;
    const fs::path root = write_tiny_layout_collection(scratch_dir("memory_source_layout"), spec);
    const NpzGraphSource npz = train_source(root);
    const auto mem = MemoryGraphSource::load(npz, 0);
    CHECK(mem->size() == 1);
    CHECK(mem->partial_reads());
    CHECK(mem->collection() == npz.collection());
    CHECK(mem->where(0) == npz.where(0));
    const GraphInfo a = mem->info(0), b = npz.info(0);
    CHECK(a.name == b.name);
    CHECK(a.source == b.source);
    CHECK(a.num_nodes == b.num_nodes);
    CHECK(a.num_edges == b.num_edges);
    CHECK(a.num_configs == b.num_configs);
    CHECK(a.num_config_nodes == b.num_config_nodes);

    const std::vector<int64_t> rows = {5, 0, 5, 95};
    const LayoutGraph gm = mem->load_layout(0, ConfigRows::only(rows)),
                      gn = npz.load_layout(0, ConfigRows::only(rows));
    CHECK(same_tensor(gm.node_feat, gn.node_feat));
    CHECK(gm.node_opcode == gn.node_opcode);
    CHECK(gm.edge_index == gn.edge_index);
    CHECK(gm.node_config_ids == gn.node_config_ids);
    CHECK(gm.node_splits == gn.node_splits);
    CHECK(gm.node_config_feat == gn.node_config_feat);
    CHECK(gm.config_runtime == gn.config_runtime);

    const ConfigTensors cm = mem->load_configs(0, ConfigRows::only(rows)),
                        cn = npz.load_configs(0, ConfigRows::only(rows));
    CHECK(cm.layout_feat == cn.layout_feat);
    CHECK(cm.runtime == cn.runtime);
    std::vector<int8_t> buf(rows.size() * 3 * kLayoutConfigDim), want(buf.size());
    mem->read_layout_config_rows(0, rows, buf);
    npz.read_layout_config_rows(0, rows, want);
    CHECK(buf == want);
    CHECK(mem->load_labels(0).runtime == npz.load_labels(0).runtime);
    CHECK(mem->load_configs(0, ConfigRows::all()).runtime.size() ==
          static_cast<size_t>(spec.configs));

    const LayoutGraph sm = mem->load_layout_structure(0), sn = npz.load_layout_structure(0);
    CHECK(sm.node_feat.rows() == 0);
    CHECK(sm.node_feat.cols() == kNodeFeatDim);
    CHECK(sm.node_opcode == sn.node_opcode);
    CHECK(sm.edge_index == sn.edge_index);
    CHECK(sm.node_config_ids == sn.node_config_ids);
    CHECK(sm.node_config_feat.empty());
    CHECK(sm.config_runtime.empty());

    const std::vector<int64_t> nodes = {7, 2, 7, 0};
    CHECK(same_tensor(mem->load_node_feat_rows(0, nodes), npz.load_node_feat_rows(0, nodes)));
    const StructureIndex xm = mem->load_structure_index(0), xn = npz.load_structure_index(0);
    CHECK(xm.where == xn.where);
    CHECK(xm.num_nodes == xn.num_nodes);
    CHECK(xm.num_edges == xn.num_edges);
    CHECK(xm.node_config_ids == xn.node_config_ids);
    CHECK(xm.node_splits == xn.node_splits);
    CHECK(mem->load_edge_range(0, 3, 9) == npz.load_edge_range(0, 3, 9));
    CHECK(mem->load_opcode_range(0, 4, 11) == npz.load_opcode_range(0, 4, 11));
    CHECK(mem->memory_bytes() >=
          a.num_nodes * kNodeFeatDim * 4 + spec.configs * 3 * kLayoutConfigDim);
}

TEST_CASE("a MemoryGraphSource serves the config rows, normalizers and structure of a tile graph") {
    const fs::path dir = scratch_dir("memory_source_tile");
    TinyTileSpec spec;
    const GraphStore store(write_tiny_tile_store(dir, Split::kTrain, 1, spec),
                           LabelPolicy::kRequirePositive);
    const auto mem = MemoryGraphSource::load(store, 0);
    CHECK(mem->where(0) == store.where(0));
    CHECK(mem->info(0).num_configs == spec.configs);
    CHECK(mem->info(0).num_config_nodes == 0);
    const std::vector<int64_t> rows = {3, 39, 3};
    const ConfigTensors cm = mem->load_configs(0, ConfigRows::only(rows)),
                        cs = store.load_configs(0, ConfigRows::only(rows));
    CHECK(same_tensor(cm.tile_feat, cs.tile_feat));
    CHECK(cm.runtime == cs.runtime);
    CHECK(cm.runtime_normalizers == cs.runtime_normalizers);
    const ConfigTensors lm = mem->load_labels(0), ls = store.load_labels(0);
    CHECK(lm.runtime == ls.runtime);
    CHECK(lm.runtime_normalizers == ls.runtime_normalizers);
    CHECK(lm.tile_feat.size() == 0);
    const TileGraph t = mem->load_tile_structure(0), ts = store.load_tile_structure(0);
    CHECK(t.node_feat.rows() == 0);
    CHECK(t.edge_index == ts.edge_index);
    CHECK(t.node_opcode == ts.node_opcode);
    CHECK(t.config_runtime.empty());
    const TileGraph full = mem->load_tile(0, ConfigRows::all());
    CHECK(same_tensor(full.config_feat, store.load_tile(0, ConfigRows::all()).config_feat));
    CHECK(mem->load_structure_index(0).node_config_ids.empty());
}

TEST_CASE(
    "a MemoryGraphSource refuses other indices, rows and ranges out of range and the other task") {
    TinyLayoutSpec spec;
    spec.train_graphs = 1;
    const fs::path root = write_tiny_layout_collection(scratch_dir("memory_source_errors"), spec);
    const NpzGraphSource npz = train_source(root);
    const auto mem = MemoryGraphSource::load(npz, 0);
    const std::string where = npz.where(0);
    const int64_t n = mem->info(0).num_nodes, m = mem->info(0).num_edges;
    CHECK_THROWS_WITH(mem->info(1),
                      doctest::Contains((where + ": graph index 1 out of range [0, 1)").c_str()));
    CHECK_THROWS_WITH(
        mem->load_configs(0, ConfigRows::only({0, 96})),
        doctest::Contains(
            (where +
             ": graph 'tiny_train_0': config row 96 (selection index 1) out of range [0, 96)")
                .c_str()));
    std::vector<int8_t> buf(2 * kLayoutConfigDim * 2);
    const std::vector<int64_t> bad_row = {0, -1};
    CHECK_THROWS_WITH(mem->read_layout_config_rows(0, bad_row, buf),
                      doctest::Contains("config row -1"));
    std::vector<int8_t> small(3);
    CHECK_THROWS_WITH(mem->read_layout_config_rows(0, bad_row, small),
                      doctest::Contains("the buffer 3"));
    const std::vector<int64_t> bad_node = {0, n};
    CHECK_THROWS_WITH(mem->load_node_feat_rows(0, bad_node),
                      doctest::Contains((where + ": node_feat row").c_str()));
    CHECK_THROWS_WITH(mem->load_edge_range(0, 2, m + 1),
                      doctest::Contains((where + ": edge_index rows [2, ").c_str()));
    CHECK_THROWS_WITH(mem->load_opcode_range(0, -1, 3),
                      doctest::Contains((where + ": node_opcode rows [-1, 3)").c_str()));
    CHECK_THROWS_WITH(mem->load_tile(0, ConfigRows::none()),
                      doctest::Contains("holds layout graphs, not tile graphs"));
    CHECK_THROWS_WITH(mem->load_tile_structure(0), doctest::Contains("not tile graphs"));
    CHECK_THROWS_WITH(
        MemoryGraphSource(tiny_layout_graph("x", 0, spec), CollectionId::parse("tile:xla"),
                          "x.npz"),
        doctest::Contains("x.npz: collection tile:xla holds tile graphs, not layout graphs"));
}

}  // namespace segrank::test
