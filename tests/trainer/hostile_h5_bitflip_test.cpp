// One flipped bit anywhere in a checkpoint or a graph store this build wrote: the reader either
// reads it (the bit was in unused space) or refuses it with segrank::Error, never hangs or crashes.
// Each read runs in a forked child with a deadline. Before checkpoint and store format_version 3
// the string attributes lived in HDF5's global heap (no checksum; libhdf5 follows its heap IDs):
// a flipped bit there hung or crashed every reader (docs/files.md).
#include <doctest/doctest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <string>
#include <thread>
#include <vector>

#include "data/graph_store.h"
#include "gnn/model.h"
#include "tests/support/small_model.h"
#include "tests/support/store_fixtures.h"
#include "trainer/checkpoint.h"

using namespace segrank;
namespace fs = std::filesystem;

namespace {

constexpr int kRefused = 42;  // the child's exit code for a segrank::Error

std::string slurp(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

void spit(const fs::path& p, const std::string& bytes) {
    std::ofstream out(p, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

// "ok", "refused", "hang" (killed after 5 s), "signal N" or "exit N": read() run in a child.
std::string outcome_of(const std::function<void()>& read) {
    const pid_t pid = fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        int code = 0;
        try {
            read();
        } catch (const Error&) {
            code = kRefused;
        } catch (...) {
            code = 3;
        }
        _exit(code);
    }
    int status = 0;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (waitpid(pid, &status, WNOHANG) == 0) {
        if (std::chrono::steady_clock::now() > deadline) {
            kill(pid, SIGKILL);
            waitpid(pid, &status, 0);
            return "hang";
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(2));
    }
    if (WIFSIGNALED(status)) return "signal " + std::to_string(WTERMSIG(status));
    const int code = WEXITSTATUS(status);
    return code == 0 ? "ok" : code == kRefused ? "refused" : "exit " + std::to_string(code);
}

// Flips bit (offset % 8) of `count` offsets spread evenly over the file at `path` (and of a
// global heap's first bytes, if it has one: a file written before the fix), writing it each time,
// and runs read(); every outcome must be "ok" or "refused". Returns the refusals.
int scan(const fs::path& path, int count, const std::function<void()>& read) {
    const std::string original = slurp(path);
    REQUIRE(original.size() > 1000);
    // Nothing in the global heap: HDF5 would follow its unchecked object IDs.
    CHECK_MESSAGE(original.find("GCOL") == std::string::npos,
                  "a global heap collection (variable-length data) in ", path.string());
    std::vector<size_t> offsets;
    for (int k = 0; k < count; ++k)
        offsets.push_back(original.size() * static_cast<size_t>(k) / static_cast<size_t>(count) +
                          static_cast<size_t>(k % 5));
    // A heap, if any: every 5th byte of its first 600 (its objects' IDs and sizes).
    const size_t heap = original.find("GCOL");
    for (size_t o = heap; heap != std::string::npos && o < std::min(heap + 600, original.size());
         o += 5)
        offsets.push_back(o);
    int refused = 0;
    for (const size_t offset : offsets) {
        std::string bytes = original;
        bytes[offset] = static_cast<char>(bytes[offset] ^ (1 << (offset % 8)));
        spit(path, bytes);
        const std::string r = outcome_of(read);
        CAPTURE(offset);
        CHECK_MESSAGE((r == "ok" || r == "refused"), path.string(), " with byte ", offset,
                      " flipped: ", r);
        refused += r == "refused";
    }
    spit(path, original);
    return refused;
}

using test::small_model;

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE(
        "a checkpoint with one flipped bit anywhere is read or refused, never hangs or crashes") {
        const fs::path path = test::scratch_dir("h5_bitflip_ckpt") / "best.ckpt.h5";
        Model a(small_model());
        a.params().initialize(3);
        AdamW opt(a.params(), AdamWConfig{});
        {
            CheckpointWriter w(path);
            w.put_params(a.params(), &opt);
            w.put_state(17, 2);
            w.put_attr("config_toml", std::string("[model]\nhidden = 4\nlayers = 2\n"));
            w.put_attr("task", std::string("layout"));
            w.put_attr("best_selection", std::string("0.25"));
            w.commit();
        }
        const auto read = [&] {
            CheckpointReader r(path);
            Model b(small_model());
            AdamW o(b.params(), AdamWConfig{});
            r.load_params(b.params(), &o);
            (void)r.attr_string("config_toml");
            (void)r.attr_string("task");
            (void)r.attr_string("best_selection");
        };
        CHECK(outcome_of(read) == "ok");
        const int refused = scan(path, 60, read);
        CHECK(refused > 0);
    }

    TEST_CASE(
        "a graph store with one flipped bit anywhere is read or refused, never hangs or crashes") {
        const fs::path path = test::scratch_dir("h5_bitflip_store") / "layout_xla_random_valid.h5";
        {
            GraphStoreWriter w(
                path, CollectionId{Task::kLayout, Source::kXla, Search::kRandom, Split::kValid},
                path.parent_path());
            w.add(test::chain_layout("g0", 12, 5));
            w.add(test::chain_layout("g1", 9, 4));
            w.finish();
        }
        const auto read = [&] {
            const GraphStore s(path);
            for (int64_t i = 0; i < s.size(); ++i) {
                (void)s.info(i);
                (void)s.load_layout(i, ConfigRows::all());
            }
        };
        CHECK(outcome_of(read) == "ok");
        const int refused = scan(path, 60, read);
        CHECK(refused > 0);
    }

    // 20 links in one group (a checkpoint's /params): HDF5 1.10 crashed listing a damaged dense
    // link storage, which a group past 8 links used before links were kept compact.
    TEST_CASE("a group of 20 datasets with one flipped bit is listed or refused, never a crash") {
        const fs::path path = test::scratch_dir("h5_bitflip_links") / "links.h5";
        {
            H5File f = H5File::create(path);
            H5Group g = f.root().create_group("params");
            for (int i = 0; i < 20; ++i) {
                std::string name = "p";  // appended: GCC 12's -Wrestrict misfires on "p" + string
                name += std::to_string(i);
                g.write<float>(name, {1}, std::vector<float>{1.0f});
            }
        }
        const auto read = [&] {
            const H5File f = H5File::open_read(path);
            const H5Group g = f.root().open_group("params");
            for (const std::string& name : g.children()) (void)g.open_dataset(name).read<float>();
        };
        CHECK(outcome_of(read) == "ok");
        const int refused = scan(path, 300, read);  // about every 30th byte
        CHECK(refused > 0);
    }

    TEST_CASE("a string attribute of variable length is refused without being read") {
        const fs::path path = test::scratch_dir("h5_vlen_attr") / "layout_xla_random_valid.h5";
        {
            GraphStoreWriter w(
                path, CollectionId{Task::kLayout, Source::kXla, Search::kRandom, Split::kValid},
                path.parent_path());
            w.add(test::chain_layout("g0", 6, 3));
            w.finish();
        }
        // h5py writes a str as a variable-length string (in the global heap).
        test::edit_with_h5py(path, "f.attrs['task'] = 'layout'");
        const std::string msg = test::error_of([&] { GraphStore s(path); });
        CHECK(msg.find(path.string() + ":/ attribute 'task': a variable-length string") == 0);
    }
}
