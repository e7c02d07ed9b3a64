// Partition cache: key contents, file round trip, key mismatch, corruption, memoized partitioning.
#include "segments/partition_cache.h"

#include <doctest/doctest.h>

#include <fstream>

#include "tests/segments/random_graphs.h"
#include "tests/support/test_paths.h"

using namespace segrank;

TEST_CASE("partition cache key changes with the graph and every partition parameter") {
    GraphStructure g = test::random_dag(100, 1);
    const PartitionParams base{PartitionMethod::kContiguous, 50, 0};
    const std::string k = partition_cache_key(g, {}, base);
    CHECK(k.find(g.name) != std::string::npos);
    CHECK(partition_cache_key(g, {}, base) == k);
    CHECK(partition_cache_key(g, {}, {PartitionMethod::kContiguous, 51, 0}) != k);
    CHECK(partition_cache_key(g, {}, {PartitionMethod::kMetis, 50, 0}) !=
          partition_cache_key(g, {}, {PartitionMethod::kMetis, 50, 1}));
    const std::vector<int64_t> s1{0, 40, 100}, s2{0, 60, 100};
    CHECK(partition_cache_key(g, s1, {PartitionMethod::kSplits, 50, 0}) !=
          partition_cache_key(g, s2, {PartitionMethod::kSplits, 50, 0}));
    GraphStructure h = test::random_dag(100, 1);
    std::swap(h.edge_index[0], h.edge_index[2]);  // same name and size, different edges
    CHECK(partition_cache_key(h, {}, base) != k);
}

TEST_CASE("partition files round-trip, ignore other keys and reject corruption") {
    const auto dir = test::scratch_dir("partition_cache");
    const GraphStructure g = test::random_dag(700, 3);
    const Partition p = partition_metis(700, g.edge_index, 100, 0);
    const auto path = dir / "p.bin";
    save_partition_file(path, "key-a", p);
    const auto back = load_partition_file(path, "key-a");
    REQUIRE(back.has_value());
    CHECK(back->num_nodes == p.num_nodes);
    CHECK(back->offsets == p.offsets);
    CHECK(back->nodes == p.nodes);
    CHECK_FALSE(load_partition_file(path, "key-b").has_value());
    CHECK_FALSE(load_partition_file(dir / "absent.bin", "key-a").has_value());
    {
        std::ofstream out(dir / "bad.bin", std::ios::binary);
        out << "not a partition";
    }
    CHECK_THROWS_WITH_AS(load_partition_file(dir / "bad.bin", "key-a"),
                         doctest::Contains("bad magic"), Error);
    // Truncated file.
    std::filesystem::copy_file(path, dir / "short.bin");
    std::filesystem::resize_file(dir / "short.bin", std::filesystem::file_size(path) - 8);
    CHECK_THROWS_WITH_AS(load_partition_file(dir / "short.bin", "key-a"),
                         doctest::Contains("truncated"), Error);
}

TEST_CASE("partition_graph_cached computes once and then reads the cached partition") {
    const auto dir = test::scratch_dir("partition_cache_memo");
    const GraphStructure g = test::random_dag(900, 8);
    const PartitionParams params{PartitionMethod::kMetis, 128, 4};
    const Partition first = partition_graph_cached(g, {}, params, dir);
    int files = 0;
    std::filesystem::path file;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        ++files;
        file = e.path();
    }
    REQUIRE(files == 1);
    // Overwrite the cache with a different valid partition under the same key: it must be used.
    const Partition other = partition_contiguous(900, 128);
    save_partition_file(file, partition_cache_key(g, {}, params), other);
    const Partition second = partition_graph_cached(g, {}, params, dir);
    CHECK(second.offsets == other.offsets);
    CHECK(second.nodes == other.nodes);
    // Empty cache dir: plain computation.
    const Partition plain = partition_graph_cached(g, {}, params, {});
    CHECK(plain.nodes == first.nodes);
}
