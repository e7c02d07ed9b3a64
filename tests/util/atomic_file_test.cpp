// util/atomic_file: all-or-nothing writes and the output path policy (regular files replaced
// whole, devices and FIFOs written through, symlinks followed, directories refused).
#include "util/atomic_file.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstring>
#include <fstream>
#include <functional>
#include <sstream>
#include <thread>
#include <vector>

#include "gnn/core/check.h"
#include "tests/support/test_paths.h"

using namespace segrank;
using segrank::test::read_file_text;
namespace fs = std::filesystem;

namespace {

void put(const fs::path& p, const std::string& text) { std::ofstream(p, std::ios::binary) << text; }

// Names in `dir`, sorted: shows leftovers such as "<name>.tmp-<pid>".
std::vector<std::string> listing(const fs::path& dir) {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
    std::sort(names.begin(), names.end());
    return names;
}

bool is_char_device(const fs::path& p) {
    struct stat st {};
    return ::lstat(p.c_str(), &st) == 0 && S_ISCHR(st.st_mode);
}

std::string error_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}

}  // namespace

TEST_CASE(
    "write_file_atomically creates a missing file and replaces a regular one, leaving no temporary "
    "file") {
    const fs::path dir = test::scratch_dir("atomic_regular");
    write_file_atomically(dir / "a.txt", "first\n");
    CHECK(read_file_text(dir / "a.txt") == "first\n");
    write_file_atomically(dir / "a.txt", {"sec", "", "ond\n"});
    CHECK(read_file_text(dir / "a.txt") == "second\n");
    write_file_atomically(dir / "empty", "");
    CHECK(fs::is_regular_file(dir / "empty"));
    CHECK(fs::file_size(dir / "empty") == 0);
    CHECK(listing(dir) == std::vector<std::string>{"a.txt", "empty"});
    const OutputTarget t = resolve_output(dir / "a.txt");
    CHECK_FALSE(t.write_through);
    CHECK(t.path == dir / "a.txt");
}

TEST_CASE(
    "a missing parent folder is an error naming the path and the folder, and creates nothing") {
    const fs::path dir = test::scratch_dir("atomic_noparent");
    const std::string e = error_of([&] { write_file_atomically(dir / "no" / "x.csv", "x"); });
    CHECK(e.find((dir / "no" / "x.csv").string()) != std::string::npos);
    CHECK(e.find("folder '" + (dir / "no").string() + "' does not exist") != std::string::npos);
    CHECK(listing(dir).empty());
    // A regular file used as a folder.
    put(dir / "f", "keep");
    CHECK(error_of([&] {
              write_file_atomically(dir / "f" / "x.csv", "x");
          }).find("Not a directory") != std::string::npos);
    CHECK(read_file_text(dir / "f") == "keep");
}

TEST_CASE("a directory target is refused naming it, and no <dir>.tmp is left behind") {
    const fs::path dir = test::scratch_dir("atomic_dir");
    fs::create_directories(dir / "out");
    put(dir / "out" / "inside", "x");
    const std::string e = error_of([&] { write_file_atomically(dir / "out", "data"); });
    CHECK(e.find((dir / "out").string() + ": is a directory") != std::string::npos);
    CHECK(listing(dir) == std::vector<std::string>{"out"});
    CHECK(listing(dir / "out") == std::vector<std::string>{"inside"});
    CHECK_THROWS_WITH_AS(AtomicOutput(dir / "out"), doctest::Contains("is a directory"), Error);
    CHECK(listing(dir) == std::vector<std::string>{"out"});
}

TEST_CASE("a FIFO (named pipe) is refused before anything is opened or created") {
    // Opening a named pipe for writing blocks until a reader opens it, maybe forever.
    const fs::path dir = test::scratch_dir("atomic_fifo");
    const fs::path fifo = dir / "pipe";
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    CHECK_THROWS_WITH_AS(resolve_output(fifo), doctest::Contains("pipe: is a FIFO (named pipe)"),
                         Error);
    CHECK_THROWS_WITH_AS(write_file_atomically(fifo, "x"), doctest::Contains("is a FIFO"), Error);
    CHECK_THROWS_WITH_AS(AtomicOutput{fifo}, doctest::Contains("is a FIFO"), Error);
    // Through a symbolic link too.
    fs::create_symlink("pipe", dir / "link");
    CHECK_THROWS_WITH_AS(write_file_atomically(dir / "link", "x"),
                         doctest::Contains(("(link to " + fifo.string() + "): is a FIFO").c_str()),
                         Error);
    struct stat st {};
    REQUIRE(::lstat(fifo.c_str(), &st) == 0);
    CHECK(S_ISFIFO(st.st_mode));
    CHECK(listing(dir) == std::vector<std::string>{"link", "pipe"});
}

TEST_CASE("a pipe named by an open descriptor (/proc/self/fd/N) is written through to its reader") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    std::string got;
    std::thread reader([&] {
        char buf[65536];
        for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) got.append(buf, size_t(n));
    });
    const std::string big(300000, 'x');  // more than a pipe buffer: short writes happen
    const fs::path p = "/proc/self/fd/" + std::to_string(fds[1]);
    CHECK(resolve_output(p).write_through);
    write_file_atomically(p, {"head,", big, ",tail"});
    ::close(fds[1]);
    reader.join();
    ::close(fds[0]);
    CHECK(got == "head," + big + ",tail");
}

TEST_CASE("/dev/null is written through and stays a character device") {
    const OutputTarget t = resolve_output("/dev/null");
    CHECK(t.write_through);
    write_file_atomically("/dev/null", "discarded\n");
    CHECK(is_char_device("/dev/null"));
    CHECK_FALSE(fs::exists("/dev/null.tmp-" + std::to_string(::getpid())));
}

TEST_CASE(
    "a write that fails on /dev/full is an error naming it, and /dev/full stays a character "
    "device") {
    const std::string e = error_of([] { write_file_atomically("/dev/full", "x,y\n"); });
    CHECK(e.find("/dev/full: write failed: No space left on device") != std::string::npos);
    CHECK(is_char_device("/dev/full"));
    CHECK_FALSE(fs::exists("/dev/full.tmp-" + std::to_string(::getpid())));
}

TEST_CASE("a failing write to a regular file leaves the old content and no temporary file") {
    const fs::path dir = test::scratch_dir("atomic_efbig");
    put(dir / "sub.csv", "old content\n");
    // RLIMIT_FSIZE turns writes past 1 KiB into EFBIG (SIGXFSZ ignored), a real failing write.
    rlimit old{};
    REQUIRE(::getrlimit(RLIMIT_FSIZE, &old) == 0);
    const auto old_handler = std::signal(SIGXFSZ, SIG_IGN);
    rlimit small = old;
    small.rlim_cur = 1024;
    REQUIRE(::setrlimit(RLIMIT_FSIZE, &small) == 0);
    const std::string e =
        error_of([&] { write_file_atomically(dir / "sub.csv", std::string(4096, 'n')); });
    ::setrlimit(RLIMIT_FSIZE, &old);
    std::signal(SIGXFSZ, old_handler);
    CHECK(e.find((dir / "sub.csv").string() + ": write failed: File too large") !=
          std::string::npos);
    CHECK(read_file_text(dir / "sub.csv") == "old content\n");
    CHECK(listing(dir) == std::vector<std::string>{"sub.csv"});
}

TEST_CASE("a symlink is followed: the file it points to is replaced and the link kept") {
    const fs::path dir = test::scratch_dir("atomic_symlink");
    fs::create_directories(dir / "real");
    put(dir / "real" / "file.csv", "old");
    fs::create_symlink("real/file.csv", dir / "link.csv");    // relative
    fs::create_symlink(dir / "link.csv", dir / "chain.csv");  // absolute, to a link
    write_file_atomically(dir / "chain.csv", "new");
    CHECK(fs::is_symlink(dir / "link.csv"));
    CHECK(fs::is_symlink(dir / "chain.csv"));
    CHECK(fs::read_symlink(dir / "link.csv") == "real/file.csv");
    CHECK(read_file_text(dir / "real" / "file.csv") == "new");
    CHECK(listing(dir / "real") == std::vector<std::string>{"file.csv"});
    CHECK(resolve_output(dir / "chain.csv").path == dir / "real" / "file.csv");
    // A dangling link creates its target.
    fs::create_symlink("real/made.csv", dir / "dangling.csv");
    write_file_atomically(dir / "dangling.csv", "made");
    CHECK(fs::is_symlink(dir / "dangling.csv"));
    CHECK(read_file_text(dir / "real" / "made.csv") == "made");
    // A loop is an error.
    fs::create_symlink("loop_b", dir / "loop_a");
    fs::create_symlink("loop_a", dir / "loop_b");
    CHECK_THROWS_WITH_AS(write_file_atomically(dir / "loop_a", "x"),
                         doctest::Contains("symbolic links"), Error);
}

TEST_CASE("a link inside /proc (an open descriptor, as behind /dev/stdout) is written through") {
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const fs::path through = "/proc/self/fd/" + std::to_string(fds[1]);
    const OutputTarget t = resolve_output(through);
    CHECK(t.write_through);
    write_file_atomically(through, "via fd\n");
    ::close(fds[1]);
    char buf[64] = {};
    const ssize_t n = ::read(fds[0], buf, sizeof buf);
    ::close(fds[0]);
    CHECK(std::string(buf, n > 0 ? static_cast<size_t>(n) : 0) == "via fd\n");
}

TEST_CASE("a socket is refused naming its kind") {
    const fs::path dir = test::scratch_dir("atomic_socket");
    const fs::path sock = dir / "s";
    const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
    REQUIRE(fd >= 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    REQUIRE(sock.string().size() < sizeof(addr.sun_path));
    std::strcpy(addr.sun_path, sock.c_str());
    REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
    CHECK_THROWS_WITH_AS(write_file_atomically(sock, "x"), doctest::Contains("is a socket"), Error);
    ::close(fd);
}

TEST_CASE("AtomicOutput removes an uncommitted temporary file and commits a finished one") {
    const fs::path dir = test::scratch_dir("atomic_output");
    {
        AtomicOutput out(dir / "store.h5");
        CHECK(out.temp_path() == dir / ("store.h5.tmp-" + std::to_string(::getpid())));
        put(out.temp_path(), "half");
    }  // destroyed without commit (an exception on the way)
    CHECK(listing(dir).empty());
    put(dir / "store.h5", "old");
    {
        AtomicOutput out(dir / "store.h5");
        put(out.temp_path(), "whole");
        out.commit();
        CHECK_THROWS_WITH_AS(out.commit(), doctest::Contains("committed twice"), Error);
    }
    CHECK(read_file_text(dir / "store.h5") == "whole");
    CHECK(listing(dir) == std::vector<std::string>{"store.h5"});
}

TEST_CASE(
    "AtomicOutput into a device copies the finished file through, and into /dev/full fails and "
    "removes it") {
    fs::path tmp;
    {
        AtomicOutput out("/dev/null");
        tmp = out.temp_path();
        CHECK(tmp.parent_path() == fs::temp_directory_path());
        put(tmp, "bytes");
        out.commit();
    }
    CHECK_FALSE(fs::exists(tmp));
    CHECK(is_char_device("/dev/null"));
    AtomicOutput full("/dev/full");
    put(full.temp_path(), "bytes");
    CHECK_THROWS_WITH_AS(full.commit(),
                         doctest::Contains("/dev/full: write failed: No space left on device"),
                         Error);
    CHECK_FALSE(fs::exists(full.temp_path()));
    CHECK(is_char_device("/dev/full"));
}

TEST_CASE(
    "commit_file moves a staged folder onto a missing path and refuses an existing directory") {
    const fs::path dir = test::scratch_dir("atomic_commit_dir");
    fs::create_directories(dir / "staging" / "split");
    put(dir / "staging" / "split" / "g.npz", "g");
    commit_file(dir / "staging" / "split", dir / "train");
    CHECK(read_file_text(dir / "train" / "g.npz") == "g");
    CHECK_FALSE(fs::exists(dir / "staging" / "split"));
    fs::create_directories(dir / "staging" / "again");
    CHECK_THROWS_WITH_AS(commit_file(dir / "staging" / "again", dir / "train"),
                         doctest::Contains("is a directory"), Error);
    CHECK_FALSE(fs::exists(dir / "staging" / "again"));  // removed on failure
    CHECK(read_file_text(dir / "train" / "g.npz") == "g");
}

TEST_CASE("CreatedDirectories removes the empty folders it created unless kept, and only those") {
    const auto base = segrank::test::scratch_dir("created_dirs");
    namespace fs = std::filesystem;
    {
        segrank::CreatedDirectories d(base / "a" / "b" / "c");
        CHECK(fs::is_directory(base / "a" / "b" / "c"));
        CHECK(d.created().size() == 3);
    }
    CHECK_FALSE(fs::exists(base / "a"));  // all three gone, base kept
    CHECK(fs::is_directory(base));
    {
        segrank::CreatedDirectories d(base / "x" / "y");
        std::ofstream(base / "x" / "y" / "f") << "1";
    }
    CHECK(fs::exists(base / "x" / "y" / "f"));  // not empty: kept
    {
        segrank::CreatedDirectories d(base / "k" / "l");
        d.keep();
    }
    CHECK(fs::is_directory(base / "k" / "l"));
    {
        segrank::CreatedDirectories d(base / "k" / "l" / "m");  // only m is new
        CHECK(d.created().size() == 1);
    }
    CHECK(fs::is_directory(base / "k" / "l"));
    CHECK_FALSE(fs::exists(base / "k" / "l" / "m"));
    std::ofstream(base / "file") << "1";
    CHECK_THROWS_WITH_AS(segrank::CreatedDirectories(base / "file" / "sub"),
                         doctest::Contains("file' exists and is not a directory (needed for"),
                         segrank::Error);
}
