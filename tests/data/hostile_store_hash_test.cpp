// Hostile graph stores (ctest label `hostile`): corruptions HDF5's Fletcher32 cannot see (it sums
// 16-bit words mod 65535, so a word turned 0x0000 <-> 0xFFFF leaves it unchanged: an erased flash
// page reads as 0xFF bytes) are refused by the xxh3_64 per chunk (attribute chunk_xxh3) naming the
// file, the dataset and the chunk, by the reads of `segrank stats` and of training; a store of the
// previous format (Fletcher32 only) is refused with the way out.
#include <doctest/doctest.h>

#include <cstring>
#include <fstream>
#include <iterator>

#include "data/graph_stats.h"
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

constexpr float kMarker = 12345.0f;  // appears nowhere else in the graph

// 4000 nodes: node_feat in 3 chunks of 1334 rows (about 1 MiB each); node 2000 holds kMarker in
// column 0 and 1.0f (0x3F800000: a low 16-bit word of zeros) in column 1, nodes 2001..2002 hold
// zeros; 200 configs with config rows 101..104 all zero after row 100 of all 5, stored
// uncompressed in chunks of 10 rows (rows 100..109 in chunk 10).
LayoutGraph marked_layout() {
    LayoutGraph g = chain_layout("g", 4000, 200);
    g.node_feat.at(2000, 0) = kMarker;
    g.node_feat.at(2000, 1) = 1.0f;
    for (int64_t r = 2001; r <= 2002; ++r)
        for (int64_t c = 0; c < kNodeFeatDim; ++c) g.node_feat.at(r, c) = 0.0f;
    const size_t row = 2 * kLayoutConfigDim;
    for (size_t k = 0; k < row; ++k) g.node_config_feat[100 * row + k] = 5;
    for (size_t k = 101 * row; k < 105 * row; ++k) g.node_config_feat[k] = 0;
    return g;
}

fs::path write_marked_store(const fs::path& path) {
    GraphStoreOptions opt;
    opt.chunk_bytes = 10 * 2 * kLayoutConfigDim;  // 10 config rows per chunk
    opt.deflate_level = 0;                        // zeros stay zeros on disk
    GraphStoreWriter w(path, kLayoutTrain, path.parent_path(), opt);
    w.add(marked_layout());
    w.finish();
    return path;
}

std::string file_bytes(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
}

// Offset of the only occurrence of `needle` in the file.
size_t find_once(const std::string& bytes, const std::string& needle) {
    const size_t at = bytes.find(needle);
    REQUIRE(at != std::string::npos);
    REQUIRE(bytes.find(needle, at + 1) == std::string::npos);
    return at;
}

void store_bytes(const fs::path& path, const std::string& bytes) {
    std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

std::string float_bytes(float a, float b) {
    const float v[2] = {a, b};
    return std::string(reinterpret_cast<const char*>(v), sizeof(v));
}

// The message every refusal below starts with.
std::string mismatch(const fs::path& h5, const std::string& dataset, int64_t chunk, int64_t first,
                     int64_t last) {
    return str(h5.string(), ":/graphs/g/", dataset, ": checksum mismatch in chunk ", chunk,
               " (rows ", first, "..", last, "): the file is corrupt (");
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("node_feat with a 16-bit word turned 0x0000 to 0xFFFF is refused naming its chunk") {
        const fs::path dir = test::scratch_dir("hostile_hash_word");
        const fs::path h5 = write_marked_store(dir / "s.h5");
        const std::vector<int64_t> node{2000};
        CHECK(GraphStore(h5).load_node_feat_rows(0, node).at(0, 1) == 1.0f);
        // 1.0f -> 1.0078f: Fletcher32's sums do not change.
        std::string bytes = file_bytes(h5);
        const size_t at = find_once(bytes, float_bytes(kMarker, 1.0f)) + 4;
        bytes[at] = static_cast<char>(0xFF);
        bytes[at + 1] = static_cast<char>(0xFF);
        store_bytes(h5, bytes);
        const GraphStore store(h5);
        const std::string expected = mismatch(h5, "node_feat", 1, 1334, 2667);
        const std::string rows = error_of([&] { store.load_node_feat_rows(0, node); });
        CAPTURE(rows);
        CHECK(rows.find(expected) == 0);
        CHECK(rows.find("stored xxh3_64 ") != std::string::npos);
        const std::string whole = error_of([&] { store.load_layout(0, ConfigRows::only({0})); });
        CHECK(whole.find(expected) == 0);
        // Rows of the other chunks still read (only the chunks read are verified).
        const std::vector<int64_t> elsewhere{0, 3999};
        CHECK(store.load_node_feat_rows(0, elsewhere).rows() == 2);
    }

    TEST_CASE("a 64-byte 0xFF fill over zeros of node_feat or config rows is refused") {
        const fs::path dir = test::scratch_dir("hostile_hash_fill");
        const fs::path h5 = write_marked_store(dir / "s.h5");
        const std::string clean = file_bytes(h5);
        // node_feat: zeros after node 2000's last column read as NaN.
        {
            std::string bytes = clean;
            const float last = GraphStore(h5)
                                   .load_node_feat_rows(0, std::vector<int64_t>{2000})
                                   .at(0, kNodeFeatDim - 1);
            const size_t at = find_once(bytes, float_bytes(last, 0.0f) + std::string(60, '\0'));
            std::memset(bytes.data() + at + 4, 0xFF, 64);
            store_bytes(h5, bytes);
            const std::vector<int64_t> nodes{2001, 5};
            const std::string msg = error_of([&] { GraphStore(h5).load_node_feat_rows(0, nodes); });
            CAPTURE(msg);
            CHECK(msg.find(mismatch(h5, "node_feat", 1, 1334, 2667)) == 0);
            CHECK(msg.find("stored xxh3_64 ") != std::string::npos);  // Fletcher32 saw nothing
        }
        // Config rows: zeros become -1, a valid layout slot, so nothing but the checksum sees it.
        {
            std::string bytes = clean;
            const size_t at =
                find_once(bytes, std::string(2 * kLayoutConfigDim, '\5') + std::string(64, '\0'));
            std::memset(bytes.data() + at + 2 * kLayoutConfigDim, 0xFF, 64);
            store_bytes(h5, bytes);
            const GraphStore store(h5);
            const std::string expected = mismatch(h5, "node_config_feat", 10, 100, 109);
            std::vector<int8_t> out(2 * kLayoutConfigDim);
            const std::string train =
                error_of([&] { store.read_layout_config_rows(0, std::vector<int64_t>{102}, out); });
            CAPTURE(train);
            CHECK(train.find(expected) == 0);
            CHECK(train.find("stored xxh3_64 ") != std::string::npos);
            CHECK(error_of([&] {
                      store.load_configs(0, ConfigRows::only({3, 101}));
                  }).find(expected) == 0);
            const std::string stats = error_of([&] { compute_stats(store, "s.h5"); });
            CAPTURE(stats);
            CHECK(stats.find(expected) == 0);
            // K sampled rows outside that chunk read as written.
            CHECK(store.load_configs(0, ConfigRows::only({199, 0})).layout_feat.size() ==
                  2 * 2 * kLayoutConfigDim);
        }
    }

    TEST_CASE(
        "edge_index with its zero 16-bit words turned to 0xFFFF is refused naming its chunk") {
        const fs::path dir = test::scratch_dir("hostile_hash_edges");
        const fs::path h5 = write_marked_store(dir / "s.h5");
        // Rows 2000..2001 = (2000, 1999), (2001, 2000): the six high bytes of each int64 are zero.
        const int64_t rows[4] = {2000, 1999, 2001, 2000};
        std::string bytes = file_bytes(h5);
        const size_t at =
            find_once(bytes, std::string(reinterpret_cast<const char*>(rows), sizeof(rows)));
        for (size_t k = 0; k < sizeof(rows); ++k)
            if (bytes[at + k] == 0) bytes[at + k] = static_cast<char>(0xFF);
        store_bytes(h5, bytes);
        const GraphStore store(h5);
        const std::string expected = mismatch(h5, "edge_index", 0, 0, 3998);
        const std::string stats = error_of([&] { compute_stats(store, "s.h5"); });
        CAPTURE(stats);
        CHECK(stats.find(expected) == 0);
        CHECK(stats.find("stored xxh3_64 ") != std::string::npos);
        const std::string range = error_of([&] { store.load_edge_range(0, 1990, 2010); });
        CAPTURE(range);
        CHECK(range.find(expected) == 0);
        CHECK(error_of([&] { store.load_layout(0, ConfigRows::only({0})); }).find(expected) == 0);
    }

    TEST_CASE("a store dataset without its chunk_xxh3 attribute is refused naming the dataset") {
        const fs::path dir = test::scratch_dir("hostile_hash_missing");
        const fs::path h5 = dir / "s.h5";
        {
            GraphStoreWriter w(h5, kLayoutTrain, dir);
            w.add(chain_layout("g", 6, 3));
            w.finish();
        }
        edit_with_h5py(h5, "del f['graphs/g/config_runtime'].attrs['chunk_xxh3']");
        const std::string msg = error_of([&] { GraphStore(h5).load_labels(0); });
        CAPTURE(msg);
        CHECK(msg.find(h5.string() +
                       ":/graphs/g/config_runtime: no 'chunk_xxh3' attribute (every dataset of "
                       "this store carries its xxh3_64 per chunk): the file is corrupt or was "
                       "edited") == 0);
        // A format_version 1 store (Fletcher32 only) is refused with the way out.
        edit_with_h5py(h5, "f.attrs['format_version'] = 1");
        const std::string old = error_of([&] { GraphStore s(h5); });
        CAPTURE(old);
        CHECK(old.find(h5.string() +
                       ": graph store format_version 1, written before store datasets "
                       "carried an xxh3_64 checksum per chunk") == 0);
        CHECK(old.find("pack it again with `segrank pack --force`") != std::string::npos);
    }
}
