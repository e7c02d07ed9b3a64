// HDF5 graph store (docs/files.md#hdf5-store): round trips against npz, K-row reads that touch only
// their chunks (measured with the kernel's per-process read counter), h5py interoperability.
#include "data/graph_store.h"

#include <doctest/doctest.h>

#include <fstream>
#include <sstream>

#include "data/graph_source.h"
#include "data/graph_stats.h"
#include "gnn/core/rng.h"
#include "tests/support/child_process.h"
#include "tests/support/test_paths.h"

using namespace segrank;

namespace {

// Bytes this process has read through read()/pread() so far (Linux /proc/self/io "rchar").
int64_t rchar() {
    std::ifstream f("/proc/self/io");
    std::string k;
    int64_t v = 0;
    while (f >> k >> v)
        if (k == "rchar:") return v;
    return -1;
}

// 3 nodes (2 -> 1 -> 0) and c tile configs with incompressible (pseudo-random) features.
TileGraph wide_tile(const std::string& name, int64_t c) {
    TileGraph g;
    g.name = name;
    g.source = name + ".npz";
    g.node_feat = Tensor(3, kNodeFeatDim);
    g.node_opcode = {1, 2, 3};
    g.edge_index = {1, 0, 2, 1};
    g.config_feat = Tensor(c, kTileConfigDim);
    uint64_t s = 0x9E3779B97F4A7C15ull;
    for (int64_t i = 0; i < g.config_feat.size(); ++i) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        g.config_feat[i] = static_cast<float>(s % 1000003) / 7.0f;
    }
    for (int64_t i = 0; i < c; ++i) {
        g.config_runtime.push_back(1000 + i);
        g.config_runtime_normalizers.push_back(999);
    }
    return g;
}

LayoutGraph small_layout(const std::string& name, int64_t c) {
    LayoutGraph g;
    g.name = name;
    g.source = name + ".npz";
    g.node_feat = Tensor(4, kNodeFeatDim);
    g.node_feat.fill(0.5f);
    g.node_opcode = {1, 26, 75, 34};
    g.edge_index = {1, 0, 2, 1, 3, 2};
    g.node_config_ids = {1, 2, 3};
    for (int64_t j = 0; j < c; ++j)
        for (int k = 0; k < 3 * kLayoutConfigDim; ++k)
            g.node_config_feat.push_back(static_cast<int8_t>((j % 7 + k) % 7 - 1));
    for (int64_t j = 0; j < c; ++j) g.config_runtime.push_back(500 + (j * 37) % 101);
    g.node_splits = {0, 2, 4};
    return g;
}

// A store seen through GraphSource's default (whole-graph) partial reads, as a source without
// partial reads would serve them.
struct PlainSource : GraphSource {
    const GraphStore& s;
    explicit PlainSource(const GraphStore& st) : s(st) {}
    const CollectionId& collection() const override { return s.collection(); }
    int64_t size() const override { return s.size(); }
    GraphInfo info(int64_t i) const override { return s.info(i); }
    TileGraph load_tile(int64_t i, const ConfigRows& r) const override { return s.load_tile(i, r); }
    LayoutGraph load_layout(int64_t i, const ConfigRows& r) const override {
        return s.load_layout(i, r);
    }
};

}  // namespace

TEST_CASE("packing the public tile samples gives a store with identical graphs and statistics") {
    SEGRANK_REQUIRE_SHARED_DATA(data);
    const auto colls = discover_collections(data / "npz_samples/tile_xla_test");
    REQUIRE(colls.size() == 1);
    const NpzGraphSource npz(colls[0]);
    const auto path = test::scratch_dir("store_tile") / "tile.h5";
    {
        GraphStoreWriter w(path, colls[0].id, colls[0].dir);
        for (int64_t i = 0; i < npz.size(); ++i) w.add(npz.load_tile(i, ConfigRows::all()));
        w.finish();
    }
    const GraphStore store(path);
    CHECK(store.collection() == colls[0].id);
    CHECK(store.collection().full_name() == "tile:xla:test");
    REQUIRE(store.size() == 5);
    for (int64_t i = 0; i < store.size(); ++i) {
        const TileGraph a = npz.load_tile(i, ConfigRows::all());
        const TileGraph b = store.load_tile(i, ConfigRows::all());
        CHECK(a.name == b.name);
        CHECK(b.source == a.source);
        CHECK(std::equal(a.node_feat.span().begin(), a.node_feat.span().end(),
                         b.node_feat.span().begin(), b.node_feat.span().end()));
        CHECK(a.node_opcode == b.node_opcode);
        CHECK(a.edge_index == b.edge_index);
        CHECK(std::equal(a.config_feat.span().begin(), a.config_feat.span().end(),
                         b.config_feat.span().begin(), b.config_feat.span().end()));
        CHECK(a.config_runtime_normalizers == b.config_runtime_normalizers);
        const GraphInfo info = store.info(i);
        CHECK(info.num_nodes == a.num_nodes());
        CHECK(info.num_edges == a.num_edges());
        CHECK(info.num_configs == a.num_configs());
    }
    const auto s1 = compute_stats(npz, "npz");
    const auto s2 = compute_stats(store, "h5");
    Json j1 = to_json(s1), j2 = to_json(s2);  // equal but for where they were read from
    CHECK(j1["source"] == "npz");
    j1.erase("source");
    j2.erase("source");
    CHECK(dump_json(j1) == dump_json(j2));
    CHECK(s1.nodes == 2 + 52 + 15 + 21 + 65);
    CHECK(s1.configs == 32 + 1282 + 807 + 52 + 2951);
}

TEST_CASE("loading K config rows reads only their chunks, not the whole config tensor") {
    const auto path = test::scratch_dir("store_k") / "k.h5";
    const TileGraph g = wide_tile("wide", 6000);
    {
        GraphStoreOptions opt;
        opt.chunk_bytes = 4096;  // 42 rows of 96 bytes per chunk -> 143 chunks
        GraphStoreWriter w(path,
                           CollectionId{Task::kTile, Source::kXla, Search::kNone, Split::kTrain},
                           "synthetic", opt);
        w.add(g);
        w.finish();
    }
    const GraphStore store(path);
    const H5Dataset cf =
        store.file().root().open_group("graphs").open_group("wide").open_dataset("config_feat");
    CHECK(cf.chunk_rows() == 42);
    const int64_t stored = cf.storage_bytes();
    REQUIRE(stored > 400000);  // incompressible: ~576 KB

    const std::vector<int64_t> rows = {5999, 17, 3000};
    const int64_t before = rchar();
    REQUIRE(before >= 0);
    const TileGraph k = store.load_tile(0, ConfigRows::only(rows));
    const int64_t partial = rchar() - before;
    const int64_t before_all = rchar();
    const TileGraph all = store.load_tile(0, ConfigRows::all());
    const int64_t full = rchar() - before_all;
    MESSAGE("config_feat storage " << stored << " B; read for 3 rows " << partial << " B; all rows "
                                   << full << " B");
    CHECK(full > stored * 9 / 10);
    // 3 chunks of 4 KiB plus metadata (the chunk indexes of every checksummed dataset), far below
    // the tensor.
    CHECK(partial < stored / 15);
    REQUIRE(k.num_configs() == 3);
    for (size_t i = 0; i < rows.size(); ++i) {
        CHECK(k.config_runtime[i] == g.config_runtime[static_cast<size_t>(rows[i])]);
        for (int c = 0; c < kTileConfigDim; ++c)
            CHECK(k.config_feat.at(static_cast<int64_t>(i), c) == g.config_feat.at(rows[i], c));
    }
    CHECK(all.num_configs() == 6000);
    CHECK(store.load_tile(0, ConfigRows::none()).num_configs() == 0);
    CHECK_THROWS_WITH_AS(store.load_tile(0, ConfigRows::only({6000})),
                         doctest::Contains("graphs/wide/config_feat: row 6000"), Error);
    CHECK_THROWS_WITH_AS(store.load_layout(0, ConfigRows::all()),
                         doctest::Contains("not layout graphs"), Error);
}

TEST_CASE("layout store: selected node_config_feat rows (int8 on disk) match the graph") {
    const auto dir = test::scratch_dir("store_layout");
    const CollectionId id{Task::kLayout, Source::kNlp, Search::kRandom, Split::kValid};
    {
        GraphStoreWriter w(dir / "l.h5", id, dir);
        w.add(small_layout("b_graph", 50));
        w.add(small_layout("a_graph", 9));
        CHECK_THROWS_WITH_AS(w.add(small_layout("a_graph", 2)),
                             doctest::Contains("duplicate graph name 'a_graph'"), Error);
        CHECK_THROWS_WITH_AS(
            w.add(wide_tile("t", 2)),
            doctest::Contains("is a tile graph but the store holds layout:nlp:random"), Error);
        w.finish();
    }
    const GraphStore store(dir / "l.h5");
    CHECK(store.collection().full_name() == "layout:nlp:random:valid");
    CHECK(store.names() == std::vector<std::string>{"a_graph", "b_graph"});
    const LayoutGraph ref = small_layout("b_graph", 50);
    const std::vector<int64_t> rows = {49, 0, 49, 13};
    const LayoutGraph g = store.load_layout(1, ConfigRows::only(rows));
    const size_t row = 3 * kLayoutConfigDim;
    REQUIRE(g.node_config_feat.size() == rows.size() * row);
    for (size_t i = 0; i < rows.size(); ++i) {
        CHECK(std::equal(
            g.node_config_feat.begin() + static_cast<long>(i * row),
            g.node_config_feat.begin() + static_cast<long>((i + 1) * row),
            ref.node_config_feat.begin() + static_cast<long>(static_cast<size_t>(rows[i]) * row)));
        CHECK(g.config_runtime[i] == ref.config_runtime[static_cast<size_t>(rows[i])]);
    }
    CHECK(g.node_splits == ref.node_splits);
    CHECK(g.node_config_ids == ref.node_config_ids);
    const auto st = compute_stats(store.load_layout(1, ConfigRows::all()));
    CHECK(st.config_nodes == 3);
    CHECK(st.duplicate_configs == 50 - 7);  // rows repeat with period 7
}

TEST_CASE("layout store keeps node_loop_trips when the graph has them and none otherwise") {
    const auto dir = test::scratch_dir("store_loop_trips");
    const CollectionId id{Task::kLayout, Source::kXla, Search::kRandom, Split::kTrain};
    LayoutGraph with = small_layout("with", 4);
    for (int64_t v = 0; v < with.num_nodes(); ++v)
        with.node_loop_trips.insert(with.node_loop_trips.end(),
                                    {static_cast<float>(v % 3), v % 2 ? 1.0f : 0.0f});
    {
        GraphStoreWriter w(dir / "l.h5", id, dir);
        w.add(with);
        w.add(small_layout("without", 4));
        w.finish();
    }
    const GraphStore store(dir / "l.h5");
    CHECK(store.load_layout(0, ConfigRows::none()).node_loop_trips == with.node_loop_trips);
    CHECK(store.load_layout_structure(0).node_loop_trips == with.node_loop_trips);
    CHECK(store.load_layout(1, ConfigRows::all()).node_loop_trips.empty());
    CHECK(store.load_layout_structure(1).node_loop_trips.empty());
}

TEST_CASE("h5py opens a packed store and sees the documented schema") {
    const auto dir = test::scratch_dir("store_h5py");
    {
        GraphStoreWriter w(dir / "s.h5",
                           CollectionId{Task::kTile, Source::kXla, Search::kNone, Split::kValid},
                           dir);
        w.add(wide_tile("g0", 100));
        w.finish();
    }
    const auto r = test::run_command(
        "/usr/bin/python3 -c \"import h5py; f=h5py.File('" + (dir / "s.h5").string() +
        "','r'); g=f['graphs/g0']; c=g['config_feat']; print(f.attrs['format'].decode(), "
        "int(f.attrs['format_version']),"
        " f.attrs['collection'].decode(), f.attrs['split'].decode(), list(f['graphs']), c.shape, "
        "c.dtype, "
        "c.chunks[1], c.compression,"
        " g['node_opcode'].dtype, g['edge_index'][:].tolist(), int(g.attrs['num_configs']), "
        "int(g['config_runtime'][99]))\"");
    CHECK(r.exit_code == 0);
    CHECK(r.output ==
          "segrank-graph-store 3 tile:xla valid ['g0'] (100, 24) float32 24 gzip uint8 [[1, 0], "
          "[2, 1]] 100 1099\n");
}

TEST_CASE("a store written without finish() leaves no file, non-stores are rejected") {
    const auto dir = test::scratch_dir("store_abort");
    {
        GraphStoreWriter w(dir / "a.h5", CollectionId{}, dir);
        w.add(wide_tile("g", 4));
    }
    CHECK(std::filesystem::is_empty(dir));
    { H5File f = H5File::create(dir / "plain.h5"); }
    CHECK_THROWS_WITH_AS(GraphStore(dir / "plain.h5"),
                         doctest::Contains("plain.h5: not a segrank graph store"), Error);
}

TEST_CASE(
    "list_graph_stores returns the sorted .h5 files, refuses a .h5 without the HDF5 signature and "
    "ignores other names") {
    const std::filesystem::path dir = segrank::test::scratch_dir("list_graph_stores");
    auto write = [&](const char* name, bool signature) {
        std::ofstream f(dir / name, std::ios::binary);
        f << (signature ? std::string("\x89HDF\r\n\x1a\n", 8) : std::string("not hdf5")) << "rest";
    };
    write("b.h5", true);
    write("a.h5", true);
    write("c.h5", false);
    write("d.txt", true);
    CHECK_THROWS_WITH_AS(segrank::list_graph_stores(dir),
                         doctest::Contains("c.h5: not an HDF5 file"), segrank::Error);
    std::filesystem::remove(dir / "c.h5");
    const auto stores = segrank::list_graph_stores(dir);
    REQUIRE(stores.size() == 2);
    CHECK(stores[0].filename() == "a.h5");
    CHECK(stores[1].filename() == "b.h5");
}

TEST_CASE(
    "a broken symbolic link or a folder named *.h5 / *.npz in a data folder is an error naming it, "
    "not skipped") {
    namespace fs = std::filesystem;
    const fs::path dir = segrank::test::scratch_dir("listing_broken");
    std::ofstream(dir / "a.h5", std::ios::binary) << std::string("\x89HDF\r\n\x1a\n", 8);
    fs::create_symlink(dir / "gone.h5", dir / "b.h5");
    CHECK_THROWS_WITH_AS(segrank::list_graph_stores(dir),
                         ((dir / "b.h5").string() + ": broken symbolic link (to '" +
                          (dir / "gone.h5").string() + "', which does not exist)")
                             .c_str(),
                         segrank::Error);
    fs::remove(dir / "b.h5");
    fs::create_directories(dir / "e.h5");
    CHECK_THROWS_WITH_AS(
        segrank::list_graph_stores(dir),
        ((dir / "e.h5").string() + ": not a regular file (expected a .h5 file)").c_str(),
        segrank::Error);
    // npz folders: the same rule.
    const fs::path npz = segrank::test::scratch_dir("listing_broken_npz");
    fs::create_symlink(npz / "gone.npz", npz / "g.npz");
    const std::string npz_error = (npz / "g.npz").string() + ": broken symbolic link (to '" +
                                  (npz / "gone.npz").string() + "', which does not exist)";
    CHECK_THROWS_WITH_AS(segrank::discover_collections(npz), npz_error.c_str(), segrank::Error);
    // A link to a real file is followed.
    fs::remove(dir / "e.h5");
    fs::create_symlink(dir / "a.h5", dir / "c.h5");
    CHECK(segrank::list_graph_stores(dir).size() == 2);
}

TEST_CASE("store range reads: structure index, edge and opcode ranges equal the loaded structure") {
    const auto dir = test::scratch_dir("store_ranges");
    const CollectionId id{Task::kLayout, Source::kXla, Search::kDefault, Split::kTrain};
    LayoutGraph big = small_layout("g", 3);
    // 5000 nodes in a chain plus skips, so edge_index spans several chunks.
    const int64_t n = 5000;
    big.node_feat = Tensor(n, kNodeFeatDim);
    big.node_opcode.resize(n);
    big.edge_index.clear();
    for (int64_t v = 0; v < n; ++v)
        big.node_opcode[static_cast<size_t>(v)] = static_cast<int32_t>(v % 121);
    for (int64_t v = 1; v < n; ++v) {
        big.edge_index.insert(big.edge_index.end(), {v, v - 1});
        if (v >= 7) big.edge_index.insert(big.edge_index.end(), {v, v - 7});
    }
    big.node_config_ids = {3, 70, 4999};
    big.node_splits = {0, 1000, 5000};
    big.node_config_feat.resize(3 * 3 * kLayoutConfigDim, 1);
    {
        GraphStoreWriter w(dir / "r.h5", id, dir);
        w.add(big);
        w.finish();
    }
    const GraphStore store(dir / "r.h5");
    const StructureIndex x = store.load_structure_index(0);
    CHECK(x.name == "g");
    CHECK(x.num_nodes == n);
    CHECK(x.num_edges == big.num_edges());
    CHECK(x.node_config_ids == big.node_config_ids);
    CHECK(x.node_splits == big.node_splits);
    const std::vector<int64_t> mid = store.load_edge_range(0, 1234, 4321);
    CHECK(mid == std::vector<int64_t>(big.edge_index.begin() + 2 * 1234,
                                      big.edge_index.begin() + 2 * 4321));
    CHECK(store.load_edge_range(0, 5, 5).empty());
    CHECK(store.load_opcode_range(0, 4990, 5000) ==
          std::vector<int32_t>(big.node_opcode.begin() + 4990, big.node_opcode.end()));
    CHECK_THROWS_WITH_AS(store.load_edge_range(0, 10, big.num_edges() + 1),
                         doctest::Contains("edge_index: rows [10, "), Error);
    CHECK_THROWS_WITH_AS(store.load_opcode_range(0, -1, 3),
                         doctest::Contains("node_opcode: rows [-1, 3) out of range"), Error);
    // The base-class defaults (used by sources without partial reads) agree with the store's reads.
    const PlainSource plain(store);
    CHECK(plain.load_edge_range(0, 1234, 4321) == mid);
    CHECK(plain.load_opcode_range(0, 4990, 5000) == store.load_opcode_range(0, 4990, 5000));
    CHECK(plain.load_structure_index(0).node_splits == x.node_splits);
    CHECK(plain.load_structure_index(0).num_edges == x.num_edges);
    CHECK_THROWS_WITH_AS(plain.load_edge_range(0, 3, 2),
                         doctest::Contains("edge_index rows [3, 2) out of range"), Error);
}

TEST_CASE("read_layout_config_rows fills a caller's buffer with the rows load_configs returns") {
    const auto dir = test::scratch_dir("store_config_rows");
    const CollectionId id{Task::kLayout, Source::kNlp, Search::kRandom, Split::kTrain};
    {
        GraphStoreWriter w(dir / "c.h5", id, dir);
        w.add(small_layout("g", 40));
        w.finish();
    }
    const GraphStore store(dir / "c.h5");
    const std::vector<int64_t> rows = {39, 3, 3, 17};
    std::vector<int8_t> buf(rows.size() * 3 * kLayoutConfigDim, 99);
    store.read_layout_config_rows(0, rows, buf);
    CHECK(buf == store.load_configs(0, ConfigRows::only(rows)).layout_feat);
    // The base-class default (sources without partial reads) gives the same rows.
    const PlainSource plain(store);
    std::vector<int8_t> buf2(buf.size(), 99);
    plain.read_layout_config_rows(0, rows, buf2);
    CHECK(buf2 == buf);
    std::vector<int8_t> small(buf.size() - 1);
    CHECK_THROWS_WITH_AS(store.read_layout_config_rows(0, rows, small),
                         doctest::Contains("node_config_feat: destination has"), Error);
    CHECK_THROWS_WITH_AS(plain.read_layout_config_rows(0, rows, small),
                         doctest::Contains("the buffer"), Error);
    const std::vector<int64_t> bad = {40};
    CHECK_THROWS_WITH_AS(
        store.read_layout_config_rows(0, bad, std::span<int8_t>(buf.data(), 3 * kLayoutConfigDim)),
        doctest::Contains("row 40 (selection index 0) out of range [0, 40)"), Error);
}

TEST_CASE(
    "a store whose size attributes disagree with its datasets is refused naming the attribute") {
    const auto dir = test::scratch_dir("store_bad_attr");
    const CollectionId id{Task::kLayout, Source::kXla, Search::kRandom, Split::kTrain};
    {
        GraphStoreWriter w(dir / "a.h5", id, dir);
        w.add(small_layout("g", 5));
        w.finish();
    }
    CHECK(GraphStore(dir / "a.h5").info(0).num_nodes == 4);
    for (const char* attr : {"num_nodes", "num_edges", "num_configs", "num_config_nodes"}) {
        CAPTURE(attr);
        std::filesystem::copy_file(dir / "a.h5", dir / "b.h5",
                                   std::filesystem::copy_options::overwrite_existing);
        {
            H5File f = H5File::open_write(dir / "b.h5");
            f.root().open_group("graphs").open_group("g").set_attr(attr, 5000);
        }
        const GraphStore store(dir / "b.h5");
        CHECK_THROWS_WITH_AS(
            store.info(0),
            doctest::Contains((std::string("attribute ") + attr + " = 5000 but ").c_str()), Error);
    }
}

TEST_CASE("a layout graph written in parts reads back equal to the same graph written whole") {
    const auto dir = test::scratch_dir("store_parts");
    LayoutGraph whole = small_layout("g", 9);
    // Two more nodes, so that the parts are nodes [0, 2) and [2, 6): the second part's edges point
    // into the first.
    whole.node_feat = Tensor(6, kNodeFeatDim);
    for (int64_t i = 0; i < whole.node_feat.size(); ++i) whole.node_feat[i] = 0.25f * (i % 11);
    whole.node_opcode = {1, 26, 75, 34, 2, 3};
    whole.edge_index = {1, 0, 2, 1, 3, 2, 4, 0, 5, 4};
    whole.node_splits = {0, 2, 6};
    CollectionId id;
    id.task = Task::kLayout;
    id.source = Source::kXla;
    id.search = Search::kRandom;
    id.split = Split::kTrain;
    {
        GraphStoreWriter w(dir / "whole.h5", id, dir);
        w.add(whole);
        w.finish();
    }
    GraphStructure p1, p2;
    p1.name = p2.name = "g";
    p1.node_feat = Tensor(2, kNodeFeatDim);
    p2.node_feat = Tensor(4, kNodeFeatDim);
    std::copy(whole.node_feat.data(), whole.node_feat.data() + 2 * kNodeFeatDim,
              p1.node_feat.data());
    std::copy(whole.node_feat.data() + 2 * kNodeFeatDim, whole.node_feat.data() + 6 * kNodeFeatDim,
              p2.node_feat.data());
    p1.node_opcode = {1, 26};
    p2.node_opcode = {75, 34, 2, 3};
    p1.edge_index = {1, 0};
    p2.edge_index = {2, 1, 3, 2, 4, 0, 5, 4};
    {
        GraphStoreWriter w(dir / "parts.h5", id, dir);
        w.begin_layout_parts("g", whole.source);
        w.append_layout_part(p1);
        CHECK_THROWS_WITH_AS(w.add(small_layout("h", 2)),
                             doctest::Contains("still being written in parts"), Error);
        CHECK_THROWS_WITH_AS(w.finish(), doctest::Contains("still being written in parts"), Error);
        w.append_layout_part(p2);
        LayoutGraph configs;
        configs.node_config_ids = whole.node_config_ids;
        configs.node_config_feat = whole.node_config_feat;
        configs.config_runtime = whole.config_runtime;
        configs.node_splits = whole.node_splits;
        w.end_layout_parts(configs);
        w.finish();
    }
    const GraphStore a(dir / "whole.h5"), b(dir / "parts.h5");
    const LayoutGraph x = a.load_layout(0, ConfigRows::all());
    const LayoutGraph y = b.load_layout(0, ConfigRows::all());
    CHECK(y.name == "g");
    CHECK(std::equal(x.node_feat.span().begin(), x.node_feat.span().end(),
                     y.node_feat.span().begin(), y.node_feat.span().end()));
    CHECK(x.node_opcode == y.node_opcode);
    CHECK(x.edge_index == y.edge_index);
    CHECK(x.node_config_ids == y.node_config_ids);
    CHECK(x.node_config_feat == y.node_config_feat);
    CHECK(x.config_runtime == y.config_runtime);
    CHECK(x.node_splits == y.node_splits);
    CHECK(b.info(0).num_nodes == 6);
    CHECK(b.info(0).num_edges == 5);
    const std::vector<int64_t> rows{1, 4, 5};
    const Tensor r = b.load_node_feat_rows(0, rows);
    CHECK(r.rows() == 3);
    CHECK(r[kNodeFeatDim] == whole.node_feat[4 * kNodeFeatDim]);
}

TEST_CASE(
    "writing a graph in parts refuses edges to later nodes, calls out of order and configs "
    "that disagree with the appended nodes, leaving no store") {
    const auto dir = test::scratch_dir("store_parts_bad");
    CollectionId id;
    id.task = Task::kLayout;
    id.source = Source::kXla;
    id.search = Search::kRandom;
    id.split = Split::kTrain;
    GraphStructure p;
    p.name = "g";
    p.node_feat = Tensor(2, kNodeFeatDim);
    p.node_opcode = {1, 2};
    {
        GraphStoreWriter w(dir / "bad.h5", id, dir);
        CHECK_THROWS_WITH_AS(w.append_layout_part(p),
                             doctest::Contains("without begin_layout_parts"), Error);
        LayoutGraph none = small_layout("g", 1);
        CHECK_THROWS_WITH_AS(w.end_layout_parts(none),
                             doctest::Contains("without begin_layout_parts"), Error);
        w.begin_layout_parts("g", "g.npz");
        CHECK_THROWS_WITH_AS(w.begin_layout_parts("h", "h.npz"),
                             doctest::Contains("still being written in parts"), Error);
        p.edge_index = {1, 2};  // node 2 comes in no part yet
        CHECK_THROWS_WITH_AS(w.append_layout_part(p),
                             doctest::Contains("value 2 out of range [0, 2)"), Error);
        p.edge_index = {1, 0};
        w.append_layout_part(p);
        LayoutGraph configs = small_layout("g", 3);  // node_splits end at 4, not 2
        CHECK_THROWS_WITH_AS(w.end_layout_parts(configs), doctest::Contains("out of range [0, 2)"),
                             Error);
    }
    CHECK_FALSE(std::filesystem::exists(dir / "bad.h5"));
}

// A store graph of 100000 nodes (node_feat 56 MB): the statistics read its structure and config
// tensors only, so the reading child's peak memory stays well under node_feat's size (`segrank
// stats` on a 4M-node store took 2.26 GB, node_feat read whole, before).
TEST_CASE("store statistics do not read node features") {
    const auto path = test::scratch_dir("store_stats_memory") / "big.h5";
    {
        TileGraph g = wide_tile("big", 64);
        const int64_t n = 100000;
        g.node_feat = Tensor(n, kNodeFeatDim);
        g.node_opcode.assign(static_cast<size_t>(n), 1);
        g.edge_index = {1, 0};
        GraphStoreWriter w(
            path, CollectionId{Task::kTile, Source::kXla, Search::kNone, Split::kTest}, ".");
        w.add(g);
        w.finish();
    }
    const auto idle = test::run_in_child([] {});
    const auto r = test::run_in_child([&] {
        const auto st = compute_stats(GraphStore(path), "h5");
        if (st.nodes != 100000 || st.configs != 64) throw std::runtime_error("wrong counts");
    });
    CAPTURE(r.error);
    CHECK(r.exit_code == 0);
    MESSAGE("peak RSS ", r.peak_rss_kb, " KiB (an idle child: ", idle.peak_rss_kb, " KiB)");
    CHECK(r.peak_rss_kb < idle.peak_rss_kb + 24 * 1024);  // node_feat alone is 54 MiB
}
