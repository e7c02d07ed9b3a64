// Hostile uses of segrank ingest and pack: an ingest ended by a signal leaves nothing behind (and
// the next one sweeps a killed one's temporaries), pack refuses a folder it would leave unreadable,
// a missing input is named with the system's reason.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>

#include "tests/support/test_paths.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) { return run_segrank_in_source(args, 1); }

// The names under `dir`, recursively, relative to it, one per line (sorted by the iteration).
std::string listing(const fs::path& dir) {
    std::string out;
    std::error_code ec;
    for (fs::recursive_directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec))
        out += fs::relative(it->path(), dir).string() + "\n";
    return out;
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("segrank ingest ended by SIGTERM or SIGHUP removes what it wrote and says so") {
        SEGRANK_REQUIRE_SHARED_DATA(data);
        const fs::path dir = scratch_dir("hostile_ingest_signal");
        // 15 tile kernels: the signal comes while they are written, one after the other.
        const fs::path pb = data / "xla_tuning" / "op_tuning_data.pb";
        for (const int sig : {SIGTERM, SIGHUP}) {
            // An existing --out with a file of the user's: only that file stays.
            fs::path out = dir / "o";
            out += std::to_string(sig);
            fs::create_directories(out);
            std::ofstream(out / "keep.txt") << "keep\n";
            fs::path log = dir / "ingest";
            log += std::to_string(sig) + ".log";
            const pid_t pid = spawn_shell_with_default_sigint(
                "exec " + sq(segrank_binary().string()) + " ingest " + sq(pb.string()) + " --out " +
                    sq(out.string()) + " --split train",
                log);
            REQUIRE(pid >= 0);
            int status = 0;
            bool exited = false;
            // The signal once the first npz folder exists: the writes have begun.
            for (int i = 0; i < 120000 && !fs::exists(out / "npz"); ++i) {
                if (::waitpid(pid, &status, WNOHANG) == pid) {
                    exited = true;
                    break;
                }
                std::this_thread::sleep_for(std::chrono::microseconds(250));
            }
            INFO(read_file_text(log));
            REQUIRE_FALSE(exited);
            REQUIRE(::kill(pid, sig) == 0);
            REQUIRE(::waitpid(pid, &status, 0) == pid);
            const std::string text = read_file_text(log);
            INFO(text);
            CHECK(WIFSIGNALED(status));
            CHECK(WTERMSIG(status) == sig);  // exit status 128 + N in a shell
            CHECK(contains_text(text,
                                "segrank ingest: interrupted; removed the npz files, temporary "
                                "files and folders this run had written under --out " +
                                    out.string() + "\n"));
            CHECK(listing(out) == "keep.txt\n");
        }
        // A --out this run created goes whole.
        const fs::path fresh = dir / "new/out";
        const fs::path log = dir / "ingest_new.log";
        const pid_t pid =
            spawn_shell_with_default_sigint("exec " + sq(segrank_binary().string()) + " ingest " +
                                                sq(pb.string()) + " --out " + sq(fresh.string()),
                                            log);
        REQUIRE(pid >= 0);
        int status = 0;
        for (int i = 0; i < 120000 && !fs::exists(fresh / "npz"); ++i) {
            if (::waitpid(pid, &status, WNOHANG) == pid) break;
            std::this_thread::sleep_for(std::chrono::microseconds(250));
        }
        REQUIRE(::kill(pid, SIGTERM) == 0);
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        const std::string text = read_file_text(log);
        INFO(text);
        CHECK(WIFSIGNALED(status));
        CHECK(contains_text(text, "segrank ingest: interrupted; removed " + (dir / "new").string() +
                                      ", which this run created for --out " + fresh.string()));
        CHECK_FALSE(fs::exists(dir / "new"));
    }

    TEST_CASE("segrank ingest removes the temporary npz files a killed ingest left") {
        SEGRANK_REQUIRE_SHARED_DATA(data);
        const fs::path dir = scratch_dir("hostile_ingest_stale_tmp");
        const fs::path train = dir / "o/npz/tile/xla/train";
        fs::create_directories(train);
        // Pid 999999999 is above any pid_max: no such process. libzip's temporary of the
        // temporary, the temporary itself, and a live process's temporary (this test's: kept).
        const std::string live = std::to_string(static_cast<long>(::getpid()));
        for (const std::string& name :
             {std::string("fusion.191.npz.tmp-999999999.q1te8e"),
              std::string("fusion.191.npz.tmp-999999999"), "x.npz.tmp-" + live})
            std::ofstream(train / name) << "partial";
        const auto r =
            run_segrank("ingest " + sq((data / "xla_tuning" / "op_tuning_data.pb").string()) +
                        " --out " + sq((dir / "o").string()) + " --split train");
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        CHECK_FALSE(fs::exists(train / "fusion.191.npz.tmp-999999999.q1te8e"));
        CHECK_FALSE(fs::exists(train / "fusion.191.npz.tmp-999999999"));
        CHECK(fs::exists(train / ("x.npz.tmp-" + live)));
        CHECK(fs::exists(train / "fusion.191.npz"));
    }

    TEST_CASE("segrank ingest of a missing protobuf names the path and 'no such file'") {
        const fs::path dir = scratch_dir("hostile_ingest_missing");
        const auto r = run_segrank("ingest /nonexistent/x.pb --out " + sq((dir / "o").string()));
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output,
                            "/nonexistent/x.pb: no such file (expected a TuningData or "
                            "ModuleTuningData protobuf file)"));
        CHECK_FALSE(fs::exists(dir / "o"));
    }

    TEST_CASE("segrank pack refuses a store folder holding an .h5 file that is no store") {
        const fs::path dir = scratch_dir("hostile_pack_foreign_h5");
        REQUIRE(run_segrank("synth --out " + sq((dir / "syn").string()) +
                            " --collections tile --graphs 3 --nodes 20:30 --configs 4 -q")
                    .exit_code == 0);
        const std::string npz = sq((dir / "syn/npz").string());
        // An HDF5 file of the user's (the signature, then no segrank store attributes), under a
        // name pack does not write, and one under the name of a collection split the input lacks.
        const std::string hdf5 = std::string("\x89HDF\r\n\x1a\n", 8) + std::string(504, '\0');
        for (const std::string& name :
             {std::string("my_model.h5"), std::string("layout_nlp_default_train.h5")}) {
            const fs::path out = dir / ("P_" + fs::path(name).stem().string());
            fs::create_directories(out);
            std::ofstream(out / name, std::ios::binary) << hdf5;
            for (const char* force : {"", " --force"}) {
                const auto r = run_segrank("pack " + npz + " --out " + sq(out.string()) + force);
                INFO(r.output);
                CHECK(r.exit_code == 1);
                CHECK(contains_text(r.output, (out / name).string() + " is an HDF5 file"));
                CHECK(contains_text(r.output,
                                    "not a segrank graph store: every .h5 file of a "
                                    "store folder must be a store written by segrank "
                                    "pack, so the folder would not be readable"));
                CHECK(listing(out) == name + "\n");
            }
        }
        // A folder of stores of an earlier pack is fine.
        const fs::path ok = dir / "P_ok";
        REQUIRE(run_segrank("pack " + npz + " --out " + sq(ok.string())).exit_code == 0);
        const auto again = run_segrank("pack " + npz + " --out " + sq(ok.string()) + " --force");
        INFO(again.output);
        CHECK(again.exit_code == 0);
    }

    TEST_CASE(
        "segrank pack names a directory or a dangling symbolic link under an .h5 name in --out "
        "as what it is") {
        const fs::path dir = scratch_dir("hostile_pack_h5_kinds");
        REQUIRE(run_segrank("synth --out " + sq((dir / "syn").string()) +
                            " --collections tile --graphs 3 --nodes 20:30 --configs 4 -q")
                    .exit_code == 0);
        const std::string npz = sq((dir / "syn/npz").string());
        fs::create_directories(dir / "d/dir.h5");
        fs::create_directories(dir / "l");
        fs::create_symlink("/nonexistent/x.h5", dir / "l/dangling.h5");
        const std::pair<std::string, std::string> cases[] = {
            {"d", (dir / "d/dir.h5").string() + " is a directory, not a segrank graph store"},
            {"l", (dir / "l/dangling.h5").string() +
                      " is a dangling symbolic link to /nonexistent/x.h5, not a segrank graph "
                      "store"},
        };
        for (const auto& [out, expected] : cases) {
            const auto r = run_segrank("pack " + npz + " --out " + sq((dir / out).string()));
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, expected));
            CHECK_FALSE(contains_text(r.output, "an empty file"));
        }
        CHECK(listing(dir / "d") == "dir.h5\n");
        CHECK(listing(dir / "l") == "dangling.h5\n");
    }
}
