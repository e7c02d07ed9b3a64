// Hostile and unlucky inputs at the util level (ctest label `hostile`): two outputs written both or
// neither, the same file under two names, temporary files of killed processes, inputs that are not
// regular files, and long values echoed in messages.
#include <doctest/doctest.h>
#include <grp.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <vector>

#include "gnn/core/check.h"
#include "tests/support/test_paths.h"
#include "util/atomic_file.h"
#include "util/exit_status.h"
#include "util/user_input.h"

using namespace segrank;
using segrank::test::read_file_text;
namespace fs = std::filesystem;

namespace {

void put(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

std::vector<std::string> listing(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

// The pid of a process that has exited (reaped), so no live process has it for a while.
pid_t dead_pid() {
    const pid_t pid = ::fork();
    if (pid == 0) ::_exit(0);
    int status = 0;
    ::waitpid(pid, &status, 0);
    return pid;
}

}  // namespace

TEST_SUITE("hostile") {
    TEST_CASE("write_files_atomically writes neither file when the second target fails") {
        const fs::path dir = test::scratch_dir("hostile_two_outputs");
        put(dir / "a.csv", "old a\n");
        const std::string a = "new a\n", b = "new b\n";
        const std::vector<OutputFile> files{{dir / "a.csv", a}, {"/dev/full", b}};
        CHECK_THROWS_WITH_AS(write_files_atomically(files), doctest::Contains("/dev/full"), Error);
        CHECK(read_file_text(dir / "a.csv") == "old a\n");         // not replaced
        CHECK(listing(dir) == std::vector<std::string>{"a.csv"});  // no temporary file left

        // A missing folder for the second file: the first is not written either.
        const std::vector<OutputFile> missing{{dir / "a.csv", a}, {dir / "no/b.csv", b}};
        CHECK_THROWS_WITH_AS(write_files_atomically(missing), doctest::Contains("does not exist"),
                             Error);
        CHECK(read_file_text(dir / "a.csv") == "old a\n");
        CHECK(listing(dir) == std::vector<std::string>{"a.csv"});

        const std::vector<OutputFile> ok{{dir / "a.csv", a}, {dir / "b.csv", b}};
        write_files_atomically(ok);
        CHECK(read_file_text(dir / "a.csv") == a);
        CHECK(read_file_text(dir / "b.csv") == b);
        CHECK(listing(dir) == std::vector<std::string>{"a.csv", "b.csv"});
    }

    TEST_CASE("same_file sees one file through '..', a symlink and a hard link") {
        const fs::path dir = test::scratch_dir("hostile_same_file");
        fs::create_directories(dir / "sub");
        put(dir / "f", "x");
        fs::create_symlink(dir / "f", dir / "link");
        fs::create_hard_link(dir / "f", dir / "hard");
        CHECK(same_file(dir / "f", dir / "sub/../f"));
        CHECK(same_file(dir / "f", dir / "link"));
        CHECK(same_file(dir / "f", dir / "hard"));
        CHECK(same_file(dir / "new.csv", dir / "sub/../new.csv"));  // not existing yet
        CHECK_FALSE(same_file(dir / "f", dir / "g"));
        CHECK_FALSE(same_file(dir / "new.csv", dir / "other.csv"));
    }

    TEST_CASE("same_file follows a dangling symlink to its target, relative to the link's folder") {
        const fs::path dir = test::scratch_dir("hostile_same_file_dangling");
        fs::create_directories(dir / "sub");
        fs::create_symlink("out.csv", dir / "lnk.csv");        // dangling, relative
        fs::create_symlink("lnk.csv", dir / "chain.csv");      // a link to the dangling link
        fs::create_symlink("../out.csv", dir / "sub/up.csv");  // relative to sub/
        fs::create_symlink(dir / "later", dir / "dirlink");    // a dangling folder link
        CHECK(same_file(dir / "out.csv", dir / "lnk.csv"));
        CHECK(same_file(dir / "lnk.csv", dir / "out.csv"));
        CHECK(same_file(dir / "out.csv", dir / "chain.csv"));
        CHECK(same_file(dir / "sub/up.csv", dir / "lnk.csv"));
        CHECK(same_file(dir / "dirlink/x.csv", dir / "later/x.csv"));
        CHECK_FALSE(same_file(dir / "lnk.csv", dir / "sub/out.csv"));
        CHECK(resolve_links(dir / "chain.csv") == fs::canonical(dir) / "out.csv");
        // Two outputs that are one file: refused before either is written.
        const std::string a = "a\n", b = "b\n";
        const std::vector<OutputFile> files{{dir / "out.csv", a}, {dir / "chain.csv", b}};
        CHECK_THROWS_WITH_AS(write_files_atomically(files), doctest::Contains("name the same file"),
                             Error);
        CHECK_FALSE(fs::exists(dir / "out.csv"));
    }

    TEST_CASE("remove_stale_temp_files removes temporary files of dead processes only") {
        const fs::path dir = test::scratch_dir("hostile_stale_tmp");
        const std::string dead = std::to_string(dead_pid());
        const std::string live = std::to_string(::getppid());
        put(dir / ("last.ckpt.h5.tmp-" + dead), "partial");
        put(dir / ("x.h5.tmp-" + dead), "partial");
        put(dir / ("best.ckpt.h5.tmp-" + live), "being written");
        put(dir / "metrics.jsonl", "");
        put(dir / "notes.tmp-abc", "");
        CHECK(remove_stale_temp_files(dir, "x.h5.tmp-") == 1);
        CHECK_FALSE(fs::exists(dir / ("x.h5.tmp-" + dead)));
        CHECK(fs::exists(dir / ("last.ckpt.h5.tmp-" + dead)));
        CHECK(remove_stale_temp_files(dir) == 1);
        CHECK(listing(dir) == std::vector<std::string>{"best.ckpt.h5.tmp-" + live, "metrics.jsonl",
                                                       "notes.tmp-abc"});
        // libzip's temporary of an npz temporary: "<file>.tmp-PID.XXXXXX" (six letters or digits).
        put(dir / ("m.npz.tmp-" + dead + ".q1te8e"), "partial");
        put(dir / ("m.npz.tmp-" + live + ".q1te8e"), "being written");
        put(dir / ("m.npz.tmp-" + dead + ".toolong1"), "not libzip's");
        CHECK(remove_stale_temp_files(dir, "m.npz") == 1);
        CHECK_FALSE(fs::exists(dir / ("m.npz.tmp-" + dead + ".q1te8e")));
        CHECK(fs::exists(dir / ("m.npz.tmp-" + live + ".q1te8e")));
        CHECK(fs::exists(dir / ("m.npz.tmp-" + dead + ".toolong1")));
    }

    TEST_CASE("read_input_file and require_readable_input name the path and 'Permission denied'") {
        // A folder of its own under /tmp, which the child's uid can reach (the build tree may not
        // be).
        char made[] = "/tmp/segrank_unreadable_XXXXXX";
        REQUIRE(::mkdtemp(made) != nullptr);
        const fs::path dir = made;
        REQUIRE(::chmod(made, 0755) == 0);
        put(dir / "np.toml", "[train]\n");
        REQUIRE(::chmod((dir / "np.toml").c_str(), 0) == 0);
        // Root may open any file: the checks run in a child that gave up root (uid and gid 65534,
        // no supplementary groups); as another user, in the test process itself. The message (or
        // "none") comes back through a pipe.
        auto message_of = [&](auto check) {
            int fds[2];
            REQUIRE(::pipe(fds) == 0);
            const pid_t pid = ::fork();
            REQUIRE(pid >= 0);
            if (pid == 0) {
                ::close(fds[0]);
                std::string m = "none";
                if (::geteuid() == 0 &&
                    (::setgroups(0, nullptr) != 0 || ::setresgid(65534, 65534, 65534) != 0 ||
                     ::setresuid(65534, 65534, 65534) != 0))
                    m = "cannot drop root";
                else {
                    try {
                        check();
                    } catch (const Error& e) {
                        m = e.what();
                    }
                }
                const ssize_t w = ::write(fds[1], m.data(), m.size());
                ::_exit(w == static_cast<ssize_t>(m.size()) ? 0 : 1);
            }
            ::close(fds[1]);
            std::string m;
            char buf[4096];
            for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) m.append(buf, n);
            ::close(fds[0]);
            int status = 0;
            ::waitpid(pid, &status, 0);
            return m;
        };
        const std::string read = message_of(
            [&] { read_input_file(dir / "np.toml", "a TOML config file", kMaxConfigFileBytes); });
        CHECK(read == (dir / "np.toml").string() +
                          ": cannot open for reading (expected a TOML config file): Permission "
                          "denied");
        const std::string check =
            message_of([&] { require_readable_input(dir / "np.toml", "an npz file"); });
        CHECK(check == (dir / "np.toml").string() +
                           ": cannot open for reading (expected an npz file): Permission denied");
        // A readable file passes; a missing one is named as such.
        put(dir / "ok.toml", "[train]\n");
        CHECK_NOTHROW(require_readable_input(dir / "ok.toml", "a TOML config file"));
        CHECK_THROWS_WITH_AS(require_readable_input(dir / "none.pb", "a protobuf file"),
                             doctest::Contains("none.pb: no such file (expected a protobuf file)"),
                             Error);
        std::error_code ec;
        fs::remove_all(dir, ec);
    }

    TEST_CASE("require_regular_input refuses a FIFO, a character device and a directory") {
        const fs::path dir = test::scratch_dir("hostile_regular_input");
        REQUIRE(::mkfifo((dir / "pipe.npz").c_str(), 0600) == 0);
        CHECK_THROWS_WITH_AS(require_regular_input(dir / "pipe.npz", "an npz file"),
                             doctest::Contains("pipe.npz: is a FIFO (named pipe), expected an npz "
                                               "file"),
                             Error);
        CHECK_THROWS_WITH_AS(require_regular_input("/dev/zero", "an HDF5 file"),
                             doctest::Contains("/dev/zero: is a character device, expected an "
                                               "HDF5 file"),
                             Error);
        CHECK_THROWS_WITH_AS(require_regular_input(dir, "a CSV file"),
                             doctest::Contains("is a directory"), Error);
        CHECK_THROWS_WITH_AS(require_regular_input(dir / "none.csv", "a CSV file"),
                             doctest::Contains("none.csv: no such file (expected a CSV file)"),
                             Error);
        put(dir / "ok.csv", "x");
        fs::create_symlink(dir / "ok.csv", dir / "link.csv");
        CHECK_NOTHROW(require_regular_input(dir / "link.csv", "a CSV file"));
    }

    TEST_CASE(
        "read_input_file refuses a file over its bound naming path, size and bound before "
        "reading") {
        const fs::path dir = test::scratch_dir("hostile_input_size");
        // Sparse: 1 GiB on paper, nothing on disk; a whole read would allocate 1 GiB.
        { std::ofstream(dir / "big.toml") << "[train]\n"; }
        fs::resize_file(dir / "big.toml", uint64_t{1} << 30);
        CHECK_THROWS_WITH_AS(
            read_input_file(dir / "big.toml", "a TOML config file", kMaxConfigFileBytes),
            doctest::Contains("big.toml: 1073741824 bytes (1024.0 MiB), more than "
                              "the 16777216 bytes (16.0 MiB) allowed for a TOML "
                              "config file"),
            Error);
        CHECK_THROWS_WITH_AS(require_input_size(dir / "big.toml", "a CSV file", 100),
                             doctest::Contains("more than the 100 bytes"), Error);
        put(dir / "ok.json", std::string(100, 'x'));
        CHECK(read_input_file(dir / "ok.json", "a JSON file", 100) == std::string(100, 'x'));
        CHECK_THROWS_WITH_AS(read_input_file(dir / "ok.json", "a JSON file", 99),
                             doctest::Contains("ok.json: 100 bytes"), Error);
        // What require_regular_input refuses, read_input_file refuses without opening.
        CHECK_THROWS_WITH_AS(
            read_input_file(dir, "an eval.indices JSON file", 100),
            doctest::Contains("is a directory, expected an eval.indices JSON file"), Error);
        CHECK_THROWS_WITH_AS(read_input_file("/dev/zero", "a TOML config file", 100),
                             doctest::Contains("is a character device"), Error);
        put(dir / "empty.csv", "");
        CHECK(read_input_file(dir / "empty.csv", "a CSV file", 0).empty());
    }

    TEST_CASE("echo_value shortens a long value and shows control characters escaped") {
        CHECK(echo_value("tile:xla:abc") == "tile:xla:abc");
        const std::string big(10'000'000, 'x');
        const std::string e = echo_value(big);
        CHECK(e == std::string(80, 'x') + "... (9999920 more bytes)");
        CHECK(echo_value("a\nb\x01") == "a\\nb\\x01");
    }

    TEST_CASE(
        "echo_value escapes NUL, ESC, C1 controls and bytes that are not UTF-8, keeps UTF-8") {
        // A harness error text that would clear the terminal, cut with the count of what is left.
        const std::string err = "bad\nline\x1b[2J" + std::string(100000, 'E');
        CHECK(echo_value(err, 20) == "bad\\nline\\x1b[2JEEEEEEEE... (99992 more bytes)");
        CHECK(echo_value(std::string("hello \0\x1b[31m x", 14)) == "hello \\x00\\x1b[31m x");
        CHECK(echo_value("\x7f\xc2\x9b\xff\xc3") == "\\x7f\\u009b\\xff\\xc3");
        CHECK(echo_value("caf\xc3\xa9 \xe2\x82\xac.csv") == "caf\xc3\xa9 \xe2\x82\xac.csv");
        // A cut never splits a UTF-8 character; npos escapes without cutting.
        CHECK(echo_value("ab\xe2\x82\xac", 4) == "ab... (3 more bytes)");
        CHECK(echo_value(std::string(200, 'y') + "\n", std::string_view::npos) ==
              std::string(200, 'y') + "\\n");
    }

    TEST_CASE("an error message with control characters is printed escaped, its lines kept") {
        // (A NUL cannot reach here: std::runtime_error::what() ends at it; the texts from
        // outside that may hold one are escaped where they are quoted, echo_value.)
        const ExitReport r = classify_exception(
            std::make_exception_ptr(Error("cannot open 'x\x01y' \x1b[2J\x7f\nnext")));
        CHECK(r.code == 1);
        CHECK(r.message == "error: cannot open 'x\\x01y' \\x1b[2J\\x7f\nnext");
    }
}
