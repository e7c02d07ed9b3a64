// Partition cache: key contents, file round trip, key mismatch, corruption, memoized partitioning,
// and a cache file the run cannot use (corrupt, a directory): warned, never fatal.
#include "segments/partition_cache.h"

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

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

namespace {

// What fn() writes to stderr (file descriptor 2 sent to a file while it runs).
template <typename Fn>
std::string stderr_of(const std::filesystem::path& file, Fn&& fn) {
    std::fflush(stderr);
    const int saved = ::dup(2);
    REQUIRE(saved >= 0);
    std::FILE* f = std::fopen(file.c_str(), "w");
    REQUIRE(f != nullptr);
    ::dup2(::fileno(f), 2);
    struct Restore {
        int saved;
        std::FILE* f;
        ~Restore() {
            std::fflush(stderr);
            ::dup2(saved, 2);
            ::close(saved);
            std::fclose(f);
        }
    };
    {
        Restore restore{saved, f};
        fn();
    }
    std::ifstream in(file);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
}

// The one file of the cache directory `dir`.
std::filesystem::path only_file(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> files;
    for (const auto& e : std::filesystem::directory_iterator(dir)) files.push_back(e.path());
    REQUIRE(files.size() == 1);
    return files[0];
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("a corrupt partition cache file is a cache miss: warned, recomputed and rewritten") {
        const auto dir = test::scratch_dir("partition_cache_corrupt");
        const GraphStructure g = test::random_dag(600, 5);
        const PartitionParams params{PartitionMethod::kMetis, 128, 2};
        const Partition fresh = partition_graph_cached(g, {}, params, {});
        partition_graph_cached(g, {}, params, dir / "cache");
        const auto file = only_file(dir / "cache");
        const auto size = std::filesystem::file_size(file);
        // A file cut short (a killed copy, a full disk), one that is not a partition file, and one
        // whose node count was overwritten by 2^62 (it must not be allocated).
        const std::string key = partition_cache_key(g, {}, params);
        for (const std::string corruption : {"cut", "garbage", "huge"}) {
            CAPTURE(corruption);
            if (corruption == "cut") {
                std::filesystem::resize_file(file, size - 16);
            } else if (corruption == "garbage") {
                std::ofstream(file, std::ios::binary | std::ios::trunc) << "garbage";
            } else {
                std::fstream f(file, std::ios::binary | std::ios::in | std::ios::out);
                f.seekp(static_cast<std::streamoff>(16 + key.size()));  // magic, key length, key
                const int64_t huge = int64_t{1} << 62;
                f.write(reinterpret_cast<const char*>(&huge), sizeof(huge));
            }
            bool hit = true;
            Partition p;
            const std::string err = stderr_of(dir / "stderr.txt", [&] {
                p = partition_graph_cached(g, {}, params, dir / "cache", &hit);
            });
            CHECK_FALSE(hit);
            CHECK(p.offsets == fresh.offsets);
            CHECK(p.nodes == fresh.nodes);
            CHECK(err.find("warning: ") != std::string::npos);
            CHECK(err.find(file.string()) != std::string::npos);
            CHECK(err.find(corruption == "garbage" ? "bad magic" : "truncated") !=
                  std::string::npos);
            CHECK(err.find("recomputed") != std::string::npos);
            // Rewritten whole: the next run reads it, with no warning.
            CHECK(std::filesystem::file_size(file) == size);
            CHECK(only_file(dir / "cache") == file);  // no temporary left behind
            const std::string again = stderr_of(dir / "stderr.txt", [&] {
                p = partition_graph_cached(g, {}, params, dir / "cache", &hit);
            });
            CHECK(hit);
            CHECK(again.empty());
            CHECK(p.nodes == fresh.nodes);
        }
    }

    TEST_CASE("a directory where the partition cache file goes is named, warned and left alone") {
        const auto dir = test::scratch_dir("partition_cache_dir");
        const GraphStructure g = test::random_dag(300, 6);
        const PartitionParams params{PartitionMethod::kMetis, 64, 1};
        const Partition fresh = partition_graph_cached(g, {}, params, {});
        partition_graph_cached(g, {}, params, dir);
        const auto file = only_file(dir);
        std::filesystem::remove(file);
        std::filesystem::create_directory(file);
        CHECK_THROWS_WITH_AS(load_partition_file(file, partition_cache_key(g, {}, params)),
                             doctest::Contains((file.string() + ": is a directory").c_str()),
                             Error);
        bool hit = true;
        Partition p;
        const std::string err =
            stderr_of(dir.parent_path() / "partition_cache_dir_stderr.txt",
                      [&] { p = partition_graph_cached(g, {}, params, dir, &hit); });
        CHECK_FALSE(hit);
        CHECK(p.nodes == fresh.nodes);
        CHECK(err.find("warning: " + file.string() + ": is a directory") != std::string::npos);
        CHECK(err.find("not cached") != std::string::npos);
        CHECK(std::filesystem::is_directory(file));  // nothing of the user's is removed
    }
}
