// Hostile uses of the commands that write collections (synth, pack, ingest): --force must never
// remove a user's files, and concurrent runs into one --out must not both claim success.
#include <doctest/doctest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>

#include "tests/support/test_paths.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args, const std::string& prefix = "") {
    return run_segrank_in_source(args, 1, prefix);
}

// File name -> bytes of every entry of `dir`.
std::map<std::string, std::string> folder_bytes(const fs::path& dir) {
    std::map<std::string, std::string> files;
    for (const auto& e : fs::directory_iterator(dir))
        files[e.path().filename().string()] = read_file_text(e.path());
    return files;
}

// Old stores in `dir`/P (tile and layout of one data set); returns their bytes.
std::map<std::string, std::string> pack_old_stores(const fs::path& dir) {
    REQUIRE(run_segrank("synth --out " + sq((dir / "old").string()) +
                        " --collections tile,layout --graphs 3 --nodes 20:30 --configs 4 -q")
                .exit_code == 0);
    REQUIRE(
        run_segrank("pack " + sq((dir / "old/npz").string()) + " --out " + sq((dir / "P").string()))
            .exit_code == 0);
    auto files = folder_bytes(dir / "P");
    REQUIRE(files.size() == 6);
    return files;
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("a failing segrank pack --force leaves the old stores as they were") {
        const fs::path dir = scratch_dir("hostile_pack_force_fail");
        const auto old = pack_old_stores(dir);
        REQUIRE(run_segrank("synth --out " + sq((dir / "new").string()) +
                            " --collections layout --graphs 4 --nodes 20:30 --configs 4 -q "
                            "--seed 4")
                    .exit_code == 0);
        const fs::path bad = dir / "new/npz/layout/xla/random/valid/zz_bad.npz";
        std::ofstream(bad) << std::string(3000, 'x');  // no zip archive
        const std::string pack = "pack " + sq((dir / "new/npz").string()) + " --out ";
        const auto r = run_segrank(pack + sq((dir / "P").string()) + " --force");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, "zz_bad.npz: cannot open npz"));
        CHECK_FALSE(contains_text(r.output, "packed "));  // no store of this run is in place
        CHECK(folder_bytes(dir / "P") == old);            // no temporary left either
        // Into a new folder: no store line, no folder.
        const auto fresh = run_segrank(pack + sq((dir / "Q").string()));
        CHECK(fresh.exit_code == 1);
        CHECK_FALSE(contains_text(fresh.output, "packed "));
        CHECK_FALSE(fs::exists(dir / "Q"));
        // A single store file given as --out stays as it was too.
        fs::copy_file(dir / "P/layout_xla_random_valid.h5", dir / "mine.h5");
        const auto one = run_segrank("pack " + sq(bad.parent_path().string()) + " --out " +
                                     sq((dir / "mine.h5").string()) + " --force");
        CHECK(one.exit_code == 1);
        CHECK(read_file_text(dir / "mine.h5") == old.at("layout_xla_random_valid.h5"));
        // Once it succeeds, the folder holds exactly the new data set: the tile stores of the
        // old one (no tile collection in the new input) are removed, naming them.
        fs::remove(bad);
        const auto ok = run_segrank(pack + sq((dir / "P").string()) + " --force");
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK(contains_text(ok.output, "removed " + (dir / "P/tile_xla_train.h5").string() +
                                           " (an earlier store; "));
        CHECK(contains_text(ok.output, "packed layout:xla:random:valid: "));
        const auto now = folder_bytes(dir / "P");
        CHECK(now.size() == 3);
        for (const auto& [name, bytes] : now) {
            CHECK(name.rfind("layout_xla_random_", 0) == 0);
            CHECK(bytes != old.at(name));
        }
    }

    TEST_CASE("segrank pack --force interrupted by SIGINT changes nothing in --out and says so") {
        const fs::path dir = scratch_dir("hostile_pack_force_sigint");
        const auto old = pack_old_stores(dir);
        // Layout graphs large enough that packing them takes about half a second at --deflate 9.
        REQUIRE(run_segrank("synth --out " + sq((dir / "big").string()) +
                            " --collections tile,layout --graphs 6 --nodes 500:700 --configs 100 "
                            "-q --seed 5")
                    .exit_code == 0);
        const fs::path log = dir / "pack.log";
        const pid_t pid = spawn_shell_with_default_sigint(
            "exec " + sq(segrank_binary().string()) + " pack " + sq((dir / "big/npz").string()) +
                " --out " + sq((dir / "P").string()) + " --force --deflate 9",
            log);
        REQUIRE(pid >= 0);
        // SIGINT once the tile stores are complete under their temporary names and the first
        // layout store is being written (the shell exec'ed segrank: its pid names the
        // temporaries).
        const std::string tmp = ".tmp-" + std::to_string(static_cast<long>(pid));
        const fs::path writing = dir / ("P/layout_xla_random_train.h5" + tmp);
        int status = 0;
        bool exited = false;
        for (int i = 0; i < 20000 && !fs::exists(writing) && !fs::exists(writing.string() + tmp);
             ++i) {
            if (::waitpid(pid, &status, WNOHANG) == pid) {
                exited = true;
                break;
            }
            std::this_thread::sleep_for(std::chrono::microseconds(500));
        }
        INFO(read_file_text(log));
        REQUIRE_FALSE(exited);
        REQUIRE(::kill(pid, SIGINT) == 0);
        REQUIRE(::waitpid(pid, &status, 0) == pid);
        const std::string out = read_file_text(log);
        INFO(out);
        CHECK(WIFSIGNALED(status));
        CHECK(WTERMSIG(status) == SIGINT);  // exit status 130 in a shell
        CHECK(contains_text(out, "segrank pack: interrupted; nothing was changed in --out " +
                                     (dir / "P").string() +
                                     " (its temporary stores were removed)\n"));
        CHECK_FALSE(contains_text(out, "packed "));
        CHECK(folder_bytes(dir / "P") == old);
    }

    TEST_CASE("segrank synth --force keeps a user's files in a split folder it replaces") {
        const fs::path dir = scratch_dir("hostile_synth_force_user_files");
        const fs::path out = dir / "sf";
        const fs::path train = out / "npz/tile/xla/train";
        const std::string synth = "synth --out " + sq(out.string()) +
                                  " --graphs 3 --nodes 20:30 --configs 4 -q --collections ";
        REQUIRE(run_segrank(synth + "tile,layout").exit_code == 0);
        // The user's own graph and notes beside synth's graphs.
        const fs::path ours = fs::directory_iterator(train)->path();
        fs::copy_file(ours, train / "my_real.npz");
        std::ofstream(train / "notes.txt") << "mine\n";
        const auto r = run_segrank(synth + "layout --force");
        INFO(r.output);
        REQUIRE(r.exit_code == 0);
        CHECK(fs::exists(train / "my_real.npz"));
        CHECK(read_file_text(train / "notes.txt") == "mine\n");
        CHECK_FALSE(fs::exists(ours));
        CHECK_FALSE(fs::exists(out / "npz/tile/xla/valid"));  // synth's only: removed whole
        CHECK(contains_text(r.output, "the files synth did not write stay there"));
        // Rewriting a split folder that holds the user's files is refused, naming them.
        const auto again = run_segrank(synth + "tile --force");
        INFO(again.output);
        CHECK(again.exit_code == 1);
        CHECK(contains_text(again.output, train.string() + " holds 2 file(s) segrank synth did "
                                                           "not write"));
        CHECK(contains_text(again.output, "my_real.npz, notes.txt"));
        CHECK(fs::exists(train / "my_real.npz"));
        CHECK(fs::exists(train / "notes.txt"));
        CHECK(fs::is_directory(out / "npz/layout/xla/random/train"));
    }

    TEST_CASE("two concurrent segrank pack runs into one --out: one fails naming the folder") {
        const fs::path dir = scratch_dir("hostile_pack_concurrent");
        for (const char* seed : {"1", "2"})
            REQUIRE(run_segrank("synth --out " + sq((dir / seed).string()) +
                                " --collections tile --graphs 3 --nodes 20:30 --configs 4 -q "
                                "--seed " +
                                seed)
                        .exit_code == 0);
        const fs::path out = dir / "h5";
        fs::create_directories(out);
        // flock(1) holds the folder as a running pack would: refused, naming folder and holder.
        const auto held =
            run_segrank("pack " + sq((dir / "1/npz").string()) + " --out " + sq(out.string()),
                        "flock -n " + sq(out.string()) + " ");
        INFO(held.output);
        CHECK(held.exit_code == 1);
        CHECK(contains_text(held.output, "pack: --out '" + out.string() +
                                             "' is being written by another process (pid "));
        CHECK(contains_text(held.output, ": flock -n "));
        CHECK(fs::is_empty(out));
        // A single .h5 --out locks its folder.
        const auto file = run_segrank("pack " + sq((dir / "1/npz/tile/xla/train").string()) +
                                          " --out " + sq((out / "t.h5").string()),
                                      "flock -n " + sq(out.string()) + " ");
        CHECK(file.exit_code == 1);
        CHECK(contains_text(file.output, "is being written by another process"));
        // Two started together: never both successful.
        const std::string b = sq(segrank_binary().string());
        const auto both =
            run_command("cd " + sq(dir.string()) + " && { (" + b +
                        " pack 1/npz --out d > a.log 2>&1; echo $? > a.rc) & (" + b +
                        " pack 2/npz --out d > b.log 2>&1; echo $? > b.rc) & wait; }");
        REQUIRE(both.exit_code == 0);
        const std::string rc = read_file_text(dir / "a.rc") + read_file_text(dir / "b.rc");
        INFO(rc, read_file_text(dir / "a.log"), read_file_text(dir / "b.log"));
        CHECK((rc == "0\n1\n" || rc == "1\n0\n"));
    }

    TEST_CASE("concurrent segrank ingest runs into one --out: only one claims the files") {
        SEGRANK_REQUIRE_SHARED_DATA(data);
        const fs::path dir = scratch_dir("hostile_ingest_concurrent");
        const fs::path pb = data / "xla_tuning" / "op_tuning_data.pb";
        const fs::path out = dir / "ic";
        fs::create_directories(out);
        const auto held = run_segrank("ingest " + sq(pb.string()) + " --out " + sq(out.string()),
                                      "flock -n " + sq(out.string()) + " ");
        INFO(held.output);
        CHECK(held.exit_code == 1);
        CHECK(contains_text(held.output, "ingest: --out '" + out.string() +
                                             "' is being written by another process (pid "));
        CHECK(fs::is_empty(out));
        // Three started together: exactly one succeeds (the others are locked out or find its
        // files).
        const std::string cmd = sq(segrank_binary().string()) + " ingest " + sq(pb.string()) +
                                " --out " + sq((dir / "ic2").string()) +
                                " > /dev/null 2>&1; echo $?";
        const auto three = run_command("cd " + sq(dir.string()) + " && { (" + cmd + " > 1.rc) & (" +
                                       cmd + " > 2.rc) & (" + cmd + " > 3.rc) & wait; }");
        REQUIRE(three.exit_code == 0);
        int ok = 0;
        for (const char* f : {"1.rc", "2.rc", "3.rc"}) ok += read_file_text(dir / f) == "0\n";
        CHECK(ok == 1);
    }

    TEST_CASE("segrank ingest --force never writes through a symbolic link into a non-npz file") {
        SEGRANK_REQUIRE_SHARED_DATA(data);
        const fs::path dir = scratch_dir("hostile_ingest_force_symlink");
        const std::string ingest = "ingest " +
                                   sq((data / "xla_tuning" / "op_tuning_data.pb").string()) +
                                   " --out " + sq((dir / "igs").string()) + " --split train";
        REQUIRE(run_segrank(ingest).exit_code == 0);
        const fs::path npz = dir / "igs/npz/tile/xla/train/reshape.39.npz";
        REQUIRE(fs::is_regular_file(npz));
        const std::string before = read_file_text(npz);
        std::ofstream(dir / "userf.txt") << "the user's notes\n";
        fs::remove(npz);
        fs::create_symlink(dir / "userf.txt", npz);
        const auto r = run_segrank(ingest + " --force");
        INFO(r.output);
        CHECK(r.exit_code == 1);
        CHECK(contains_text(r.output, npz.string() + ": is a file of another kind, not an npz "
                                                     "file: segrank ingest --force replaces only"));
        CHECK(contains_text(r.output, "is a symbolic link to '" + (dir / "userf.txt").string()));
        CHECK(read_file_text(dir / "userf.txt") == "the user's notes\n");
        // A link to an npz is followed (as every output): the npz it leads to is replaced.
        std::ofstream(dir / "old.npz") << before;
        fs::remove(npz);
        fs::create_symlink(dir / "old.npz", npz);
        const auto ok = run_segrank(ingest + " --force");
        INFO(ok.output);
        CHECK(ok.exit_code == 0);
        CHECK(fs::is_symlink(npz));
        CHECK(read_file_text(dir / "old.npz") == before);
    }

    TEST_CASE("segrank pack refuses a store file named for another collection split") {
        const fs::path dir = scratch_dir("hostile_pack_store_name");
        REQUIRE(run_segrank("synth --out " + sq((dir / "syn").string()) +
                            " --collections tile --graphs 3 --nodes 20:30 --configs 4 -q")
                    .exit_code == 0);
        const fs::path valid = dir / "syn/npz/tile/xla/valid";
        const fs::path h5 = dir / "h5";
        fs::create_directories(h5);
        for (const char* force : {"", " --force"}) {
            const auto r = run_segrank("pack " + sq(valid.string()) + " --out " +
                                       sq((h5 / "layout_xla_random_valid.h5").string()) + force);
            INFO(r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output,
                                "layout_xla_random_valid.h5: is the store name of "
                                "collection split layout:xla:random:valid, but "));
            CHECK(contains_text(r.output, " holds tile:xla:valid"));
            CHECK(contains_text(r.output, "name it tile_xla_valid.h5"));
            CHECK(fs::is_empty(h5));
        }
        // The right name, and a name that is no collection split's, are written.
        CHECK(run_segrank("pack " + sq(valid.string()) + " --out " +
                          sq((h5 / "tile_xla_valid.h5").string()))
                  .exit_code == 0);
        CHECK(run_segrank("pack " + sq(valid.string()) + " --out " + sq((h5 / "mine.h5").string()))
                  .exit_code == 0);
    }

    TEST_CASE(
        "segrank synth refuses a non-empty --out that is no earlier synth output and names a "
        "dangling --out link") {
        const fs::path dir = scratch_dir("hostile_synth_foreign_out");
        const std::string args = " --collections layout --graphs 4 --nodes 200:300 --configs 8 -q";
        // A run directory (or any user's folder): refused, naming it and what it holds.
        const fs::path run = dir / "run";
        fs::create_directories(run);
        write_file_text(run / "config.toml", "# segrank run configuration\n");
        write_file_text(run / "metrics.jsonl", "{}\n");
        for (const char* force : {"", " --force"}) {
            const auto r = run_segrank("synth --out " + sq(run.string()) + args + force);
            INFO(force, r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, "--out " + run.string() +
                                              ": not empty and not an earlier synth output (no "
                                              ".synth-manifest), and it holds " +
                                              (run / "config.toml").string() +
                                              " and 1 other entries, which synth does not write"));
            CHECK_FALSE(fs::exists(run / "npz"));
            CHECK_FALSE(fs::exists(run / ".synth-manifest"));
        }
        // An earlier synth output with a user's notes beside it is still synth's.
        const fs::path syn = dir / "syn";
        REQUIRE(run_segrank("synth --out " + sq(syn.string()) + args).exit_code == 0);
        write_file_text(syn / "notes.txt", "mine\n");
        const auto again = run_segrank("synth --out " + sq(syn.string()) + args + " --force");
        INFO(again.output);
        CHECK(again.exit_code == 0);
        CHECK(read_file_text(syn / "notes.txt") == "mine\n");
        // An empty folder is fine.
        fs::create_directories(dir / "empty");
        CHECK(run_segrank("synth --out " + sq((dir / "empty").string()) + args).exit_code == 0);
        // A dangling link: named with its target, not "File exists".
        fs::create_symlink(dir / "gone", dir / "link");
        const auto link = run_segrank("synth --out " + sq((dir / "link").string()) + args);
        INFO(link.output);
        CHECK(link.exit_code == 1);
        CHECK(contains_text(link.output, "--out " + (dir / "link").string() +
                                             ": is a dangling symbolic link to '" +
                                             (dir / "gone").string() + "' (which does not exist)"));
        CHECK_FALSE(contains_text(link.output, "File exists"));
        const auto below = run_segrank("synth --out " + sq((dir / "link/sub").string()) + args);
        INFO(below.output);
        CHECK(below.exit_code == 1);
        CHECK(contains_text(below.output,
                            "'" + (dir / "link").string() + "' is a dangling symbolic link to '"));
        CHECK_FALSE(fs::exists(dir / "gone"));
    }
}
