// Hostile and unlucky data (ctest label `hostile`): a 0 ns runtime in a labelled split, stores
// whose chunks were never written or whose graph has 0 configs, a store folder holding a .h5 that
// is not HDF5, and an npz input that is a FIFO or a device.
#include <doctest/doctest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <fstream>

#include "data/collection.h"
#include "data/graph_source.h"
#include "data/graph_store.h"
#include "data/input_memory.h"
#include "data/npz.h"
#include "gnn/core/check.h"
#include "tests/support/store_fixtures.h"
#include "tests/support/test_paths.h"

using namespace segrank;
namespace fs = std::filesystem;

namespace {

const CollectionId kLayoutTrain{Task::kLayout, Source::kXla, Search::kRandom, Split::kTrain};
const CollectionId kLayoutTest{Task::kLayout, Source::kXla, Search::kRandom, Split::kTest};

using test::chain_layout;
using test::error_of;

fs::path write_store(const fs::path& path, const LayoutGraph& g,
                     const CollectionId& id = kLayoutTrain) {
    GraphStoreWriter w(path, id, path.parent_path());
    w.add(g);
    w.finish();
    return path;
}

// h5py on `path` with `g` = /graphs/g bound (test::edit_with_h5py opens it as f).
void edit_with_h5py(const fs::path& path, const std::string& code) {
    test::edit_with_h5py(path, "g=f['graphs/g']; " + code);
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("a 0 ns runtime in a train split is refused naming the file, graph and config") {
        const fs::path dir = test::scratch_dir("hostile_zero_runtime");
        LayoutGraph g = chain_layout("g", 6, 4);
        g.config_runtime[2] = 0;
        // HDF5 store: labels and config-row reads (what streaming training reads) refuse it.
        const fs::path h5 = dir / "train.h5";
        edit_with_h5py(write_store(h5, chain_layout("g", 6, 4)),
                       "g['config_runtime'][2] = 0; rehash(g['config_runtime'])");
        const GraphStore store(h5);
        const std::string labels = error_of([&] { store.load_labels(0); });
        CHECK(labels.find("train.h5:/graphs/g") != std::string::npos);
        CHECK(labels.find("config 2 runtime 0 ns") != std::string::npos);
        CHECK(labels.find("labelled (train / valid) split") != std::string::npos);
        const std::string rows = error_of([&] { store.load_configs(0, ConfigRows::only({3, 2})); });
        CHECK(rows.find("train.h5:/graphs/g") != std::string::npos);
        CHECK(rows.find("config 2 runtime 0 ns") != std::string::npos);
        // A test split may hold zeros (hidden labels).
        const fs::path test_h5 = dir / "test.h5";
        write_store(test_h5, g, kLayoutTest);
        CHECK(GraphStore(test_h5).load_labels(0).runtime[2] == 0);

        // npz collection: the label-only read refuses it as well.
        const fs::path npz = dir / "npz/layout/xla/random/train";
        fs::create_directories(npz);
        save_layout_npz(g, npz / "g.npz");
        const auto cols = discover_collections(dir / "npz");
        REQUIRE(cols.size() == 1);
        const NpzGraphSource src(cols[0]);
        const std::string msg = error_of([&] { src.load_labels(0); });
        CHECK(msg.find("g.npz: key 'config_runtime': config 2 runtime 0 ns") != std::string::npos);
    }

    TEST_CASE("a store whose node_feat chunks were never written is refused on a row read") {
        const fs::path dir = test::scratch_dir("hostile_unwritten_chunks");
        const fs::path h5 = write_store(dir / "s.h5", chain_layout("g", 6, 3));
        // The dataset exists with its shape, chunked, but no chunk was ever written.
        edit_with_h5py(h5,
                       "del g['node_feat']; g.create_dataset('node_feat', shape=(6, 140), "
                       "dtype='f4', chunks=(2, 140)); rehash(g['node_feat'])");
        {
            const GraphStore store(h5);
            CHECK(store.info(0).num_nodes == 6);
            const std::vector<int64_t> nodes{0, 3};
            const std::string msg = error_of([&] { store.load_node_feat_rows(0, nodes); });
            CHECK(msg.find("s.h5:/graphs/g/node_feat") != std::string::npos);
            CHECK(msg.find("was never written") != std::string::npos);
        }  // closed: h5py below opens the file for writing
        // One chunk written, one not: rows of the written chunk read, the others are refused.
        edit_with_h5py(h5, "g['node_feat'][0:2] = np.ones((2, 140), 'f4'); rehash(g['node_feat'])");
        const std::vector<int64_t> first{1, 0};
        CHECK(GraphStore(h5).load_node_feat_rows(0, first).rows() == 2);
        const std::vector<int64_t> later{4};
        CHECK(error_of([&] {
                  GraphStore(h5).load_node_feat_rows(0, later);
              }).find("the chunk holding rows 4..5 was never written") != std::string::npos);
    }

    TEST_CASE("a store graph with 0 configs is refused as such, naming the file and graph") {
        const fs::path dir = test::scratch_dir("hostile_zero_configs");
        const fs::path h5 = write_store(dir / "s.h5", chain_layout("g", 6, 3), kLayoutTest);
        edit_with_h5py(h5,
                       "del g['config_runtime']; g.create_dataset('config_runtime', "
                       "data=np.zeros(0, 'i8')); del g['node_config_feat']; "
                       "g.create_dataset('node_config_feat', data=np.zeros((0, 2, 18), 'i1')); "
                       "g.attrs['num_configs'] = 0");
        const std::string msg = error_of([&] { GraphStore(h5).info(0); });
        CHECK(msg.find("s.h5:/graphs/g: 0 configs") != std::string::npos);
        CHECK(msg.find("without labels") == std::string::npos);
    }

    TEST_CASE("a .h5 in a store folder that is not HDF5 is an error naming it, not skipped") {
        const fs::path dir = test::scratch_dir("hostile_not_hdf5");
        write_store(dir / "a.h5", chain_layout("g", 6, 3));
        std::ofstream(dir / "b.h5") << "not an HDF5 file\n";
        const std::string msg = error_of([&] { list_graph_stores(dir); });
        CHECK(msg.find("b.h5: not an HDF5 file") != std::string::npos);
        fs::remove(dir / "b.h5");
        CHECK(list_graph_stores(dir).size() == 1);
    }

    TEST_CASE("an npz or HDF5 input that is a FIFO or a device is refused without blocking") {
        const fs::path dir = test::scratch_dir("hostile_fifo_npz");
        REQUIRE(::mkfifo((dir / "g.npz").c_str(), 0600) == 0);
        CHECK(error_of([&] { NpzReader r(dir / "g.npz"); }).find("is a FIFO") != std::string::npos);
        CHECK(error_of([&] { NpzReader r("/dev/zero"); }).find("is a character device") !=
              std::string::npos);
        REQUIRE(::mkfifo((dir / "s.h5").c_str(), 0600) == 0);
        CHECK(error_of([&] { GraphStore s(dir / "s.h5"); }).find("is a FIFO") != std::string::npos);
    }

    // h5py edits the root attributes of a valid layout:xla:random store.
    TEST_CASE("a store whose collection attribute names no collection is refused naming it") {
        const fs::path dir = test::scratch_dir("hostile_store_collection");
        for (const std::string bad : {"layout:foo:bar", "layout:xla", "tile:xla:train", "tile"}) {
            CAPTURE(bad);
            const fs::path h5 = write_store(dir / "s.h5", chain_layout("g", 6, 3));
            edit_with_h5py(h5, "f.attrs['collection'] = np.bytes_('" + bad + "')");
            const std::string msg = error_of([&] { GraphStore s(h5); });
            CAPTURE(msg);
            CHECK(msg.find((dir / "s.h5").string() + ": attribute 'collection' = '" + bad +
                           "' names no collection (expected one of tile:xla, layout:xla:default, "
                           "layout:xla:random, layout:nlp:default, layout:nlp:random)") == 0);
            fs::remove(h5);
        }
    }

    TEST_CASE("a store whose task attribute disagrees with its collection is refused naming both") {
        const fs::path dir = test::scratch_dir("hostile_store_task");
        const fs::path h5 = write_store(dir / "s.h5", chain_layout("g", 6, 3));
        edit_with_h5py(h5, "f.attrs['task'] = np.bytes_('tile')");
        const std::string msg = error_of([&] { GraphStore s(h5); });
        CAPTURE(msg);
        CHECK(msg.find(h5.string() + ": attribute 'task' = 'tile' but attribute 'collection' = "
                                     "'layout:xla:random' is a layout collection (expected "
                                     "task 'layout')") == 0);
        edit_with_h5py(h5, "f.attrs['task'] = np.bytes_('graph')");
        CHECK(error_of([&] { GraphStore s(h5); })
                  .find(h5.string() + ": attribute 'task' = 'graph' is not a task (expected tile "
                                      "or layout)") == 0);
        edit_with_h5py(h5, "del f.attrs['task']");
        CHECK(error_of([&] {
                  GraphStore s(h5);
              }).find(h5.string() + ": attribute 'task' required") == 0);
    }

    TEST_CASE("a store dataset over the memory bound is refused naming the dataset and the bound") {
        const fs::path dir = test::scratch_dir("hostile_store_bound");
        const fs::path h5 = write_store(dir / "s.h5", chain_layout("g", 6, 3));
        ::setenv(kMaxInputBytesEnv, "1000", 1);
        const std::string msg = error_of([&] { GraphStore(h5).load_layout(0, {}); });
        ::unsetenv(kMaxInputBytesEnv);
        CAPTURE(msg);
        CHECK(msg.find(h5.string() + ":/graphs/g/node_feat: the dataset (float32 shape (6, 140)) "
                                     "declares 3360 bytes (0.0 MiB) in memory, more than the 1000 "
                                     "bytes (0.0 MiB) allowed for one input array "
                                     "(SEGRANK_MAX_INPUT_BYTES") == 0);
        CHECK(GraphStore(h5).load_layout(0, {}).num_nodes() == 6);
    }
}
