// HDF5 stores that lie or cannot be written: float data where integers belong, shapes that claim
// more than the file stores, and a write that fails (a file-size limit standing in for a full
// disk).
#include <doctest/doctest.h>
#include <sys/resource.h>

#include <csignal>

#include "data/graph_stats.h"
#include "data/graph_store.h"
#include "gnn/core/check.h"
#include "tests/support/child_process.h"
#include "tests/support/store_fixtures.h"
#include "tests/support/test_paths.h"

using namespace segrank;

namespace {

const CollectionId kLayoutTrain{Task::kLayout, Source::kXla, Search::kRandom, Split::kTrain};

using test::chain_layout;

std::filesystem::path write_store(const std::filesystem::path& path) {
    GraphStoreWriter w(path, kLayoutTrain, path.parent_path());
    w.add(chain_layout("g", 6, 3));
    w.finish();
    return path;
}

// Runs Python with h5py on `path` (opened read-write as `g` = /graphs/g, numpy as np).
void edit_with_h5py(const std::filesystem::path& path, const std::string& code) {
    const auto r =
        test::run_command("/usr/bin/python3 -c \"import h5py, numpy as np; f=h5py.File('" +
                          path.string() + "','r+'); g=f['graphs/g']; " + code + "; f.close()\"");
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
}

std::string load_error(const std::filesystem::path& path) {
    try {
        GraphStore(path).load_layout(0, ConfigRows::all());
    } catch (const Error& e) {
        return e.what();
    }
    return "<no error>";
}

// Lowers this process's file-size limit (RLIMIT_FSIZE) with SIGXFSZ ignored, so writes past it fail
// with EFBIG as on a full disk; restores both on destruction. Needs no privileges.
class FileSizeLimit {
public:
    explicit FileSizeLimit(rlim_t bytes) {
        ::getrlimit(RLIMIT_FSIZE, &old_);
        old_handler_ = std::signal(SIGXFSZ, SIG_IGN);
        rlimit lim = old_;
        lim.rlim_cur = bytes;
        ::setrlimit(RLIMIT_FSIZE, &lim);
    }
    ~FileSizeLimit() {
        ::setrlimit(RLIMIT_FSIZE, &old_);
        std::signal(SIGXFSZ, old_handler_);
    }
    FileSizeLimit(const FileSizeLimit&) = delete;
    FileSizeLimit& operator=(const FileSizeLimit&) = delete;

private:
    rlimit old_{};
    void (*old_handler_)(int) = nullptr;
};

}  // namespace

TEST_CASE(
    "float data in an integer dataset of a store is refused naming store, group and dataset") {
    const auto dir = test::scratch_dir("store_float");
    const auto path = write_store(dir / "a.h5");
    CHECK(load_error(path) == "<no error>");
    // 20.5 would read as edge 20, NaN as INT64_MIN (HDF5 converts silently).
    edit_with_h5py(path,
                   "del g['edge_index']; g['edge_index'] = np.array([[1, 0], [2, 1], [3, 2], [4, "
                   "3], [5, 20.5]])");
    CHECK(load_error(path) ==
          path.string() +
              ":/graphs/g/edge_index: float64 dataset where an integer dtype is "
              "expected (int64); values would be truncated");
    const auto path2 = write_store(dir / "b.h5");
    edit_with_h5py(
        path2,
        "del g['config_runtime']; g['config_runtime'] = np.array([1, np.nan, 3], dtype='f4')");
    CHECK(load_error(path2).find(
              path2.string() + ":/graphs/g/config_runtime: float32 dataset where an integer") == 0);
    // Partial reads refuse it too.
    CHECK_THROWS_WITH_AS(GraphStore(path2).load_configs(0, ConfigRows::only({0})),
                         doctest::Contains("config_runtime: float32 dataset where an integer"),
                         Error);
}

TEST_CASE("a store dataset whose shape claims more than the file stores fails before allocating") {
    const auto dir = test::scratch_dir("store_sparse");
    const auto chunked = write_store(dir / "chunked.h5");
    // 10^8 edges = 1.6 GB declared; no chunk is written, so the file stays a few KB.
    edit_with_h5py(
        chunked,
        "del g['edge_index']; g.create_dataset('edge_index', shape=(10**8, 2), dtype='<i8', "
        "chunks=(65536, 2)); g.attrs['num_edges'] = 10**8");
    const auto contiguous = write_store(dir / "contiguous.h5");
    edit_with_h5py(
        contiguous,
        "del g['edge_index']; g.create_dataset('edge_index', shape=(10**8, 2), dtype='<i8'); "
        "g.attrs['num_edges'] = 10**8");
    CHECK(std::filesystem::file_size(chunked) < 100000);
    CHECK(std::filesystem::file_size(contiguous) < 100000);
    const auto idle = test::run_in_child([] {});
    const auto stats = [](const std::filesystem::path& p) {
        return [p] { compute_stats(GraphStore(p, LabelPolicy::kAllowTestZeros), p.string()); };
    };
    const auto c = test::run_in_child(stats(chunked));
    CAPTURE(c.error);
    CHECK(c.exit_code == 1);
    CHECK(
        c.error ==
        chunked.string() +
            ":/graphs/g/edge_index: stores 0 of its 1526 chunks (the others were never written and "
            "would read as fill values)");
    CHECK(c.peak_rss_kb < idle.peak_rss_kb + 64 * 1024);  // 1.6 GB before
    const auto k = test::run_in_child(stats(contiguous));
    CAPTURE(k.error);
    CHECK(k.exit_code == 1);
    CHECK(k.error == contiguous.string() +
                         ":/graphs/g/edge_index: shape needs 1600000000 bytes but the file stores "
                         "0 (unwritten or "
                         "truncated dataset)");
    CHECK(k.peak_rss_kb < idle.peak_rss_kb + 64 * 1024);
}

// Before the fix the error was reported, then the process died at exit (SIGSEGV in HDF5's exit-time
// cleanup, which closed the file whose close had failed a second time): ctest sees the crash.
TEST_CASE(
    "a store write that fails (file-size limit) is one clear error, leaves no file and no crash at "
    "exit") {
    const auto dir = test::scratch_dir("store_write_fail");
    const auto path = dir / "big.h5";
    {
        const FileSizeLimit limit(64 * 1024);  // node_feat alone is 400 x 140 x 4 = 224 KB
        GraphStoreWriter w(path, kLayoutTrain, dir);
        // node_feat's chunks go to the file as add() writes them (no chunk cache).
        CHECK_THROWS_WITH_AS(w.add(chain_layout("g", 400, 3)), doctest::Contains("File too large"),
                             Error);
    }
    CHECK(std::filesystem::is_empty(dir));  // the temporary store is gone
    CHECK(H5Handle::open_count() == 0);     // and every HDF5 id with it
    // HDF5 stays usable in this process, at the same path.
    write_store(path);
    CHECK(GraphStore(path).load_layout(0, ConfigRows::all()).num_nodes() == 6);
    // A failure in the final flush (everything written, then close) is reported too.
    {
        const FileSizeLimit limit(64 * 1024);
        GraphStoreWriter w(dir / "late.h5", kLayoutTrain, dir);
        // 60 KB of node_feat: fits, the metadata flush does not (HDF5 1.10 format; 106 nodes
        // fit whole, 110 fail in add()).
        w.add(chain_layout("g", 108, 3));
        CHECK_THROWS_AS(w.finish(), Error);
    }
    CHECK_FALSE(std::filesystem::exists(dir / "late.h5"));
    CHECK(H5Handle::open_count() == 0);
}
