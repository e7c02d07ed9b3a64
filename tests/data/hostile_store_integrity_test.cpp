// Hostile graph stores (ctest label `hostile`): flipped bytes in a dataset (every dataset carries
// HDF5's Fletcher32 checksum and an xxh3_64 per chunk; tests/data/hostile_store_hash_test.cpp has
// the corruptions only the second sees), a num_graphs attribute that disagrees with the graphs
// held, a file name that names another collection split than the attributes, and graph names
// that cannot be a field of the submission CSV.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "data/graph_store.h"
#include "gnn/core/check.h"
#include "tests/support/store_fixtures.h"
#include "tests/support/test_paths.h"

using namespace segrank;
namespace fs = std::filesystem;

namespace {

const CollectionId kLayoutTrain{Task::kLayout, Source::kXla, Search::kRandom, Split::kTrain};

using test::chain_layout;
using test::edit_with_h5py;
using test::error_of;

fs::path write_store(const fs::path& path, const CollectionId& id = kLayoutTrain) {
    GraphStoreWriter w(path, id, path.parent_path());
    w.add(chain_layout("g", 6, 3));
    w.finish();
    return path;
}

// Flips the lowest bit of node_feat[0][3] (3/7 as float32, stored uncompressed) in the file: the
// value stays finite and plausible, so only a checksum can tell.
void flip_node_feat_bit(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const float row[4] = {0.0f, 1.0f / 7.0f, 2.0f / 7.0f, 3.0f / 7.0f};
    const size_t at = bytes.find(std::string(reinterpret_cast<const char*>(row), sizeof(row)));
    REQUIRE(at != std::string::npos);
    bytes[at + 12] = static_cast<char>(bytes[at + 12] ^ 1);
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("a store with a flipped bit in node_feat is refused as a checksum mismatch") {
        const fs::path dir = test::scratch_dir("hostile_store_checksum");
        const fs::path h5 = write_store(dir / "s.h5");
        CHECK(GraphStore(h5).load_layout(0, {}).node_feat[3] == 3.0f / 7.0f);
        flip_node_feat_bit(h5);
        const std::string expected = h5.string() +
                                     ":/graphs/g/node_feat: checksum mismatch in chunk 0 (rows "
                                     "0..5): the file is corrupt (a chunk failed HDF5's Fletcher32";
        const std::string whole = error_of([&] { GraphStore(h5).load_layout(0, {}); });
        CAPTURE(whole);
        CHECK(whole.find(expected) == 0);
        const std::vector<int64_t> rows{0};
        const std::string partial =
            error_of([&] { GraphStore(h5).load_node_feat_rows(0, std::span(rows)); });
        CAPTURE(partial);
        CHECK(partial.find(expected) == 0);
        // The structure without node features (what `segrank stats` reads) is intact.
        CHECK(GraphStore(h5).load_layout_structure(0).num_nodes() == 6);
    }

    TEST_CASE("every dataset of a written store carries Fletcher32 and its xxh3_64 per chunk") {
        const fs::path dir = test::scratch_dir("hostile_store_checksum_all");
        const fs::path h5 = write_store(dir / "s.h5");
        // rehash() recomputes what the writer stored: the values must not change.
        edit_with_h5py(h5,
                       "g=f['graphs/g']; bad=[k for k in g if not g[k].fletcher32]; "
                       "assert not bad, bad; old={k: list(g[k].attrs['chunk_xxh3']) for k in g}; "
                       "[rehash(g[k]) for k in g]; "
                       "new={k: list(g[k].attrs['chunk_xxh3']) for k in g}; "
                       "assert old == new and all(old.values()), (old, new)");
    }

    TEST_CASE("a store dataset rewritten without checksums is refused naming it") {
        const fs::path dir = test::scratch_dir("hostile_store_no_checksum");
        const fs::path h5 = write_store(dir / "s.h5");
        edit_with_h5py(h5,
                       "g=f['graphs/g']; d=g['node_feat'][...]; del g['node_feat']; "
                       "g['node_feat']=d");
        const std::string msg = error_of([&] { GraphStore(h5).load_layout(0, {}); });
        CAPTURE(msg);
        CHECK(msg.find(h5.string() + ":/graphs/g/node_feat: no 'chunk_xxh3' attribute") == 0);
    }
}

TEST_SUITE("hostile") {
    TEST_CASE(
        "a store whose num_graphs attribute disagrees with its graphs is refused naming both") {
        const fs::path dir = test::scratch_dir("hostile_store_num_graphs");
        const fs::path h5 = write_store(dir / "s.h5");
        edit_with_h5py(h5, "f.attrs['num_graphs'] = 60");
        const std::string msg = error_of([&] { GraphStore s(h5); });
        CAPTURE(msg);
        CHECK(msg.find(h5.string() + ": attribute 'num_graphs' = 60 but the store holds 1 graph(s) "
                                     "under /graphs") == 0);
        edit_with_h5py(h5, "f.attrs['num_graphs'] = 1");
        CHECK(GraphStore(h5).size() == 1);
    }
}

TEST_SUITE("hostile") {
    TEST_CASE(
        "a store whose file name says another collection split than its attributes is refused") {
        const fs::path dir = test::scratch_dir("hostile_store_name");
        const fs::path h5 = write_store(dir / "layout_xla_random_train.h5");
        CHECK(GraphStore(h5).collection().full_name() == "layout:xla:random:train");
        edit_with_h5py(h5, "f.attrs['collection'] = np.bytes_('layout:nlp:default')");
        std::string msg = error_of([&] { GraphStore s(h5); });
        CAPTURE(msg);
        CHECK(msg.find(h5.string() +
                       ": the file name says layout:xla:random:train but attribute 'collection' = "
                       "'layout:nlp:default' and attribute 'split' = 'train' (a renamed or edited "
                       "store: pack the npz folder again, or give the file the name "
                       "layout_nlp_default_train.h5)") == 0);
        edit_with_h5py(h5,
                       "f.attrs['collection'] = np.bytes_('layout:xla:random'); "
                       "f.attrs['split'] = np.bytes_('valid')");
        msg = error_of([&] { GraphStore s(h5); });
        CHECK(msg.find("the file name says layout:xla:random:train but attribute 'collection' = "
                       "'layout:xla:random' and attribute 'split' = 'valid'") != std::string::npos);
        // A name that is no collection split's (a copy, a user's name) is not checked.
        fs::rename(h5, dir / "layout_xla_random_train_old.h5");
        CHECK(GraphStore(dir / "layout_xla_random_train_old.h5").size() == 1);
    }
}

TEST_SUITE("hostile") {
    TEST_CASE(
        "a store graph named with a comma or a line break is refused naming store and graph") {
        const fs::path dir = test::scratch_dir("hostile_store_graph_name");
        for (const std::string bad : {"a,b", "a\nb"}) {
            const fs::path h5 = dir / "s.h5";
            {
                GraphStoreWriter w(h5, kLayoutTrain, dir);
                w.add(chain_layout(bad, 6, 3));
                w.finish();
            }
            const std::string msg = error_of([&] { GraphStore s(h5); });
            CAPTURE(msg);
            const std::string shown = bad == "a,b" ? "a,b" : "a\\nb";
            const std::string ch = bad == "a,b" ? "," : "\\n";
            CHECK(msg.find(h5.string() + ": graph '" + shown + "' under /graphs: name contains '" +
                           ch +
                           "' (expected no ',' and no control character or line break: the name "
                           "is a field of the submission CSV ID,TopConfigs)") == 0);
            fs::remove(h5);
        }
    }
}
