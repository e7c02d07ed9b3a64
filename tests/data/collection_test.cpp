// Collection discovery (TpuGraphs folder layout, loose folders) and Kaggle naming.
#include "data/collection.h"

#include <doctest/doctest.h>

#include "data/graph_source.h"
#include "tests/support/test_paths.h"

using namespace segrank;

namespace {

TileGraph tile(const std::string& name) {
    TileGraph g;
    g.name = name;
    g.node_feat = Tensor(1, kNodeFeatDim);
    g.node_opcode = {5};
    g.config_feat = Tensor(2, kTileConfigDim);
    g.config_runtime = {10, 20};
    g.config_runtime_normalizers = {10, 10};
    return g;
}

LayoutGraph layout(const std::string& name) {
    LayoutGraph g;
    g.name = name;
    g.node_feat = Tensor(2, kNodeFeatDim);
    g.node_opcode = {26, 26};
    g.edge_index = {1, 0};
    g.node_config_ids = {0};
    g.node_config_feat.assign(2 * kLayoutConfigDim, 1);
    g.config_runtime = {5, 6};
    g.node_splits = {0, 2};
    return g;
}

}  // namespace

TEST_CASE("collection names follow the Kaggle convention and parse back") {
    const CollectionId t{Task::kTile, Source::kXla, Search::kNone, Split::kTest};
    CHECK(t.name() == "tile:xla");
    CHECK(t.full_name() == "tile:xla:test");
    CHECK(t.file_stem() == "tile_xla_test");
    const CollectionId l{Task::kLayout, Source::kNlp, Search::kRandom, Split::kValid};
    CHECK(l.name() == "layout:nlp:random");
    CHECK(CollectionId::parse("layout:nlp:random:valid") == l);
    CHECK(CollectionId::parse("tile:xla").split == Split::kUnknown);
    CHECK_THROWS_WITH_AS(CollectionId::parse("layout:xla"),
                         doctest::Contains("lacks the search part"), Error);
    CHECK_THROWS_WITH_AS(CollectionId::parse("tile:nlp"),
                         doctest::Contains("tile collections are xla only"), Error);
    CHECK_THROWS_WITH_AS(parse_split("dev"), doctest::Contains("expected train, valid, test"),
                         Error);
    CHECK(label_policy(Split::kTest) == LabelPolicy::kAllowTestZeros);
    CHECK(label_policy(Split::kTrain) == LabelPolicy::kRequirePositive);
}

TEST_CASE("discovery finds every split of a TpuGraphs tree from npz/ or its parent, files sorted") {
    const auto root = test::scratch_dir("coll_tree");
    const auto npz = root / "npz";
    std::filesystem::create_directories(npz / "tile/xla/train");
    std::filesystem::create_directories(npz / "tile/xla/valid");  // empty: not listed
    std::filesystem::create_directories(npz / "layout/nlp/random/test");
    std::filesystem::create_directories(npz / "layout/xla/default/train");
    save_tile_npz(tile("b"), npz / "tile/xla/train/b.npz");
    save_tile_npz(tile("a"), npz / "tile/xla/train/a.npz");
    save_layout_npz(layout("x"), npz / "layout/nlp/random/test/x.npz");
    save_layout_npz(layout("y"), npz / "layout/xla/default/train/y.npz");
    for (const auto& start : {root, npz}) {
        const auto cs = discover_collections(start);
        REQUIRE(cs.size() == 3);
        CHECK(cs[0].id.full_name() == "tile:xla:train");
        REQUIRE(cs[0].files.size() == 2);
        CHECK(cs[0].files[0].filename() == "a.npz");
        CHECK(cs[1].id.full_name() == "layout:xla:default:train");
        CHECK(cs[2].id.full_name() == "layout:nlp:random:test");
    }
    const NpzGraphSource src(discover_collections(root)[2]);
    CHECK(src.size() == 1);
    CHECK(src.info(0).num_config_nodes == 1);
    CHECK(src.load_layout(0, ConfigRows::only({1})).config_runtime == std::vector<int64_t>{6});
    CHECK_THROWS_WITH_AS(src.load_tile(0, ConfigRows::all()),
                         doctest::Contains("holds layout graphs"), Error);
}

TEST_CASE(
    "discovery refuses a root holding both npz/ and its own tile/ or layout/, naming the ignored "
    "folder") {
    const auto root = test::scratch_dir("coll_two_places");
    std::filesystem::create_directories(root / "npz/tile/xla/train");
    std::filesystem::create_directories(root / "layout/xla/random/train");
    save_tile_npz(tile("a"), root / "npz/tile/xla/train/a.npz");
    save_layout_npz(layout("y"), root / "layout/xla/random/train/y.npz");
    const std::string message =
        root.string() + ": holds both npz/ and layout/ (collections in two places)";
    CHECK_THROWS_WITH_AS(discover_collections(root), doctest::Contains(message.c_str()), Error);
    std::filesystem::remove_all(root / "layout");
    CHECK(discover_collections(root).size() == 1);
}

TEST_CASE("a loose folder of npz files is one collection, task from keys, split from the name") {
    const auto dir = test::scratch_dir("coll_loose") / "layout_nlp_random_valid";
    std::filesystem::create_directories(dir);
    save_layout_npz(layout("z"), dir / "z.npz");
    const auto cs = discover_collections(dir);
    REQUIRE(cs.size() == 1);
    CHECK(cs[0].id.full_name() == "layout:nlp:random:valid");
    CHECK(infer_task(dir / "z.npz") == Task::kLayout);
    const auto empty = test::scratch_dir("coll_empty");
    CHECK_THROWS_WITH_AS(discover_collections(empty), doctest::Contains("no npz collections found"),
                         Error);
}

TEST_CASE("the public tile sample folder is discovered as tile:xla:test") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto cs = discover_collections(data / "npz_samples/tile_xla_test");
    REQUIRE(cs.size() == 1);
    CHECK(cs[0].id.full_name() == "tile:xla:test");
    CHECK(cs[0].files.size() == 5);
    const NpzGraphSource src(cs[0]);
    CHECK(src.info(4).num_configs == 2951);
    CHECK(src.info(1).num_edges == 55);
}
