// Output paths end to end (util/atomic_file.h): `--out /dev/stdout` writes to stdout, a full device
// fails with a clear message and stays a device, a directory is refused without leftovers, and a
// symlink keeps pointing at the file it names.
#include <doctest/doctest.h>
#include <sys/stat.h>

#include <fstream>
#include <sstream>

#include "tests/eval/leaderboard_fixture.h"
#include "tests/support/test_paths.h"

using segrank::test::read_file_text;
using segrank::test::run_command;
using segrank::test::scratch_dir;
using segrank::test::segrank_binary;
using segrank::test::sq;
namespace fs = std::filesystem;

namespace {

// `segrank predict --random` over the leaderboard fixture's valid split (no model needed).
std::string predict(const fs::path& root, const std::string& out) {
    return sq(segrank_binary().string()) + " predict --random 7 --data " + sq(root.string()) +
           " --split valid --out " + out;
}

bool is_char_device(const char* p) {
    struct stat st {};
    return ::lstat(p, &st) == 0 && S_ISCHR(st.st_mode);
}

}  // namespace

TEST_CASE("segrank predict --out /dev/stdout writes the submission to stdout, as to a file") {
    const fs::path dir = scratch_dir("cli_out_stdout");
    const fs::path root = segrank::test::write_lb_truth(dir / "truth");
    const auto to_file = run_command(predict(root, sq((dir / "sub.csv").string())));
    INFO(to_file.output);
    REQUIRE(to_file.exit_code == 0);
    const std::string csv = read_file_text(dir / "sub.csv");
    REQUIRE(csv.rfind("ID,TopConfigs\n", 0) == 0);
    const auto piped = run_command(predict(root, "/dev/stdout") + " | cat");
    INFO(piped.output);
    CHECK(piped.exit_code == 0);
    CHECK(piped.output.rfind(csv, 0) == 0);  // the CSV first, then the summary line
    CHECK(piped.output.find("segrank predict: 4 graphs of split 'valid' -> /dev/stdout") !=
          std::string::npos);
    // leaderboard --out-csv /dev/stdout on that submission.
    const auto lb =
        run_command(sq(segrank_binary().string()) + " leaderboard --truth " + sq(root.string()) +
                    " --out-csv /dev/stdout " + sq((dir / "sub.csv").string()) + " | cat");
    INFO(lb.output);
    CHECK(lb.exit_code == 0);
    CHECK(lb.output.rfind("rank,name,overall,tile:xla,", 0) == 0);
}

TEST_CASE(
    "segrank predict --out /dev/full fails with exit 1 naming the device, which stays a character "
    "device") {
    const fs::path dir = scratch_dir("cli_out_full");
    const fs::path root = segrank::test::write_lb_truth(dir / "truth");
    const auto r = run_command(predict(root, "/dev/full"));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(
        r.output.find("segrank predict: error: /dev/full: write failed: No space left on device") !=
        std::string::npos);
    CHECK(r.output.find("internal error") == std::string::npos);
    CHECK(is_char_device("/dev/full"));
}

TEST_CASE("segrank predict --out DIR refuses the directory before any work and leaves no DIR.tmp") {
    const fs::path dir = scratch_dir("cli_out_dir");
    const fs::path root = segrank::test::write_lb_truth(dir / "truth");
    fs::create_directories(dir / "out");
    const auto r = run_command(predict(root, sq((dir / "out").string())));
    INFO(r.output);
    CHECK(r.exit_code == 1);
    CHECK(r.output.find((dir / "out").string() + ": is a directory") != std::string::npos);
    for (const auto& e : fs::directory_iterator(dir))
        CHECK_MESSAGE(e.path().filename().string().find(".tmp") == std::string::npos,
                      e.path().string());
    CHECK(fs::is_empty(dir / "out"));
}

TEST_CASE(
    "segrank predict --out through a symlink replaces the file it points to and keeps the link") {
    const fs::path dir = scratch_dir("cli_out_link");
    const fs::path root = segrank::test::write_lb_truth(dir / "truth");
    segrank::test::write_text(dir / "real.csv", "ID,TopConfigs\nold,0\n");  // an earlier one
    fs::create_symlink("real.csv", dir / "sub.csv");
    const auto r = run_command(predict(root, sq((dir / "sub.csv").string())));
    INFO(r.output);
    REQUIRE(r.exit_code == 0);
    CHECK(fs::is_symlink(dir / "sub.csv"));
    CHECK(read_file_text(dir / "real.csv").rfind("ID,TopConfigs\n", 0) == 0);
}
