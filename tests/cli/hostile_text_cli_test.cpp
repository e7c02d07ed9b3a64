// Text from outside echoed on the terminal, end to end (ctest label `hostile`): a harness's reply
// or error text with control characters or 100000 bytes, a submission file name with a line
// break, option values that fail to parse (empty, out of range), and the messages for a symbolic
// link loop, a missing --eval file and a tile npz given to bench.
#include <doctest/doctest.h>

#include <filesystem>
#include <string>

#include "tests/eval/leaderboard_fixture.h"
#include "tests/support/test_paths.h"

using namespace segrank::test;
namespace fs = std::filesystem;

namespace {

CommandResult run_segrank(const std::string& args) {
    return run_command("OMP_NUM_THREADS=1 " + sq(segrank_binary().string()) + " " + args);
}

// A harness (the exec protocol, docs/tune.md) that answers every request with `printf_reply`, a
// printf format whose %s is the request's id.
fs::path harness(const fs::path& dir, const std::string& name, const std::string& printf_reply) {
    const fs::path h = dir / name;
    write_text(h,
               "while read -r line; do\n"
               "  id=$(printf '%s' \"$line\" | sed 's/^{\"id\": *\\([0-9]*\\).*/\\1/')\n"
               "  printf '" +
                   printf_reply +
                   "' \"$id\"\n"
                   "done\n");
    return h;
}

// No raw control character but line breaks (an ESC, a NUL, ...) in `text`.
bool only_printable(const std::string& text) {
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if ((c < 0x20 && c != '\n') || c == 0x7f) return false;
    }
    return true;
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("segrank tune shows a harness's error text and garbage reply escaped and cut") {
        const fs::path dir = scratch_dir("hostile_text_tune_exec");
        const fs::path root = write_lb_truth(dir / "truth");
        const std::string graph = (root / "npz/layout/xla/random/valid/g1.npz").string();
        const auto tune = [&](const fs::path& h, const std::string& out) {
            return run_segrank("tune --strategy random --graph " + sq(graph) +
                               " --budget 2 --batch 1 --quiet --measure 'exec:sh " + h.string() +
                               "' --out " + sq((dir / out).string()));
        };
        // {"id": N, "error": "bad\nline<ESC>[2J" + 100000 x "E"} (JSON escapes in the line).
        const auto err = tune(harness(dir, "err.sh",
                                      "{\"id\": %s, \"error\": \"bad\\\\nline\\\\u001b[2J" +
                                          std::string(100000, 'E') + "\"}\\n"),
                              "err");
        INFO(err.output.substr(0, 3000));
        CHECK(err.exit_code == 1);
        CHECK(only_printable(err.output));
        CHECK(contains_text(err.output, "the first failure: exec: bad\\nline\\x1b[2JEEE"));
        CHECK(contains_text(err.output, "E... (99812 more bytes)"));
        CHECK(err.output.size() < 5000);
        // A reply that is no JSON, with a NUL and an ESC: the whole line shows, escaped.
        const auto nul = tune(harness(dir, "nul.sh", "hello \\000\\033[31m garbage\\n"), "nul");
        INFO(nul.output);
        CHECK(nul.exit_code == 1);
        CHECK(only_printable(nul.output));
        CHECK(contains_text(nul.output,
                            "garbage reply to request 1 (not JSON): hello \\x00\\x1b[31m garbage"));
    }

    TEST_CASE("segrank leaderboard shows a submission file name with a line break escaped") {
        const fs::path dir = scratch_dir("hostile_text_lb_name");
        const fs::path root = write_lb_truth(dir / "truth");
        const fs::path sub = dir / "new\nline.csv";
        write_text(sub, lb_submission_a());
        const auto r =
            run_segrank("leaderboard --truth " + sq(root.string()) + " " + sq(sub.string()) +
                        " --out-csv " + sq((dir / "lb.csv").string()));
        INFO(r.output);
        CHECK(r.exit_code == 0);
        CHECK(contains_text(r.output, "   1  new\\nline  "));
        CHECK_FALSE(contains_text(r.output, "new\nline"));
        // The CSV keeps the name as it is (quoted), for report --leaderboard.
        CHECK(contains_text(read_file_text(dir / "lb.csv"), "1,\"new\nline\","));
        // An issue naming the file stays on its line too.
        write_text(sub, "ID,TopConfigs\ntile:xla:k1,1;2;5;6;0\n");
        const auto bad = run_segrank("leaderboard --truth " + sq(root.string()) + " " +
                                     sq(sub.string()) + " --missing error");
        INFO(bad.output);
        CHECK(contains_text(bad.output, "new\\nline.csv"));
        CHECK_FALSE(contains_text(bad.output, "new\nline"));
    }

    TEST_CASE("an empty or out-of-range option value names the option and what it takes") {
        const fs::path dir = scratch_dir("hostile_text_option_values");
        struct Bad {
            std::string args, message;
        };
        const std::string sub = sq((dir / "sub.csv").string());
        const Bad cases[] = {
            {"predict --random 1 --data . --out " + sub + " --threads ''",
             "segrank predict: error: --threads: expected an integer, got '' (see segrank predict "
             "--help)"},
            {"predict --data . --out " + sub + " --random ''",
             "error: --random: expected an integer, got ''"},
            {"evaluate --checkpoint none --threads=",
             "error: --threads: expected an integer, got ''"},
            {"tune --budget ''", "error: --budget: expected an integer, got ''"},
            {"tune --budget 2 --noise ''", "error: --noise: expected a number, got ''"},
            {"tune --budget 2 --refit-lr ''", "error: --refit-lr: expected a number, got ''"},
            {"tune --budget 2 --seed '' --out x", "error: --seed: expected an integer, got ''"},
            {"tune --budget 99999999999999999999",
             "error: --budget: expected an integer, got '99999999999999999999' (out of range of a "
             "64-bit integer)"},
            {"tune --budget 2 --max-restarts 3000000000",
             "error: --max-restarts: expected an integer, got '3000000000' (out of range of a "
             "32-bit integer)"},
            {"tune --budget 2 --timeout 1e999",
             "error: --timeout: expected a number, got '1e999' (out of range of a double)"},
            {"bench --steps 99999999999999999999999",
             "segrank bench: error: --steps: expected an integer, got '99999999999999999999999' "
             "(out of range of a"},
            {"bench --seed -1", "error: --seed: expected a non-negative integer, got '-1'"},
            // The string option --out takes '' before --threads fails on it.
            {"predict --random 1 --data . --out '' --threads ''",
             "error: --threads: expected an integer, got ''"},
        };
        for (const Bad& b : cases) {
            const auto r = run_segrank(b.args);
            INFO(b.args, ": ", r.output);
            CHECK(r.exit_code == 1);
            CHECK(contains_text(r.output, b.message));
            CHECK_FALSE(contains_text(r.output, "failed to parse"));
        }
        CHECK_FALSE(fs::exists(dir / "sub.csv"));
    }

    TEST_CASE("a symbolic link loop, a missing --eval file and a tile npz for bench are named") {
        const fs::path dir = scratch_dir("hostile_text_path_messages");
        const fs::path root = write_lb_truth(dir / "truth");
        const fs::path lay = root / "npz/layout/xla/random/valid";
        fs::create_symlink("self.npz", lay / "self.npz");
        const auto loop = run_segrank("stats " + sq((root / "npz").string()));
        INFO(loop.output);
        CHECK(loop.exit_code == 1);
        CHECK(contains_text(loop.output,
                            (lay / "self.npz").string() + ": is a symbolic link loop (ELOOP"));
        CHECK_FALSE(contains_text(loop.output, "broken symbolic link"));
        fs::remove(lay / "self.npz");

        fs::create_directories(dir / "run");
        write_text(dir / "run/metrics.jsonl", "");
        const std::string missing = (dir / "missing.json").string();
        const auto rep = run_segrank("report " + sq((dir / "run").string()) + " --eval " +
                                     sq(missing) + " --out " + sq((dir / "r.html").string()));
        INFO(rep.output);
        CHECK(rep.exit_code == 1);
        CHECK(contains_text(rep.output, missing + ": no such file (expected `segrank evaluate "
                                                  "--json` output"));
        CHECK_FALSE(fs::exists(dir / "r.html"));

        const std::string tile = (root / "npz/tile/xla/valid/k1.npz").string();
        const auto bench =
            run_segrank("bench --npz " + sq(tile) + " --no-peer --threads 1 --steps 1");
        INFO(bench.output);
        CHECK(bench.exit_code == 1);
        CHECK(
            contains_text(bench.output, tile + ": bench needs a layout graph (this is a tile npz"));
    }
}
