#include "util/signal_cleanup.h"

#include <doctest/doctest.h>
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>

#include "tests/support/test_paths.h"

namespace fs = std::filesystem;

TEST_CASE(
    "remove_tree_signal_safe removes a file, a symlink without its target and a nested tree") {
    const fs::path dir = segrank::test::scratch_dir("signal_safe_remove");
    const fs::path target = dir / "target.txt";
    std::ofstream(target) << "kept";
    const fs::path tree = dir / "tree";
    fs::create_directories(tree / "a" / "b" / "c");
    std::ofstream(tree / "a" / "b" / "c" / "f.bin") << "x";
    std::ofstream(tree / "top.txt") << "y";
    fs::create_directories(tree / ".hidden");
    fs::create_symlink(target, tree / "a" / "link");
    segrank::remove_tree_signal_safe(tree.c_str());
    CHECK_FALSE(fs::exists(tree));
    CHECK(fs::exists(target));  // a link is removed, not followed
    segrank::remove_tree_signal_safe(target.c_str());
    CHECK_FALSE(fs::exists(target));
    segrank::remove_tree_signal_safe((dir / "missing").c_str());  // no error
}

TEST_CASE("RemoveOnTermination removes every added path on SIGTERM and prints its message") {
    const fs::path dir = segrank::test::scratch_dir("signal_guard_paths");
    const fs::path first = dir / "first.tmp", second = dir / "second.tmp", kept = dir / "kept";
    const fs::path log = dir / "stderr.txt";
    for (const auto& p : {first, second, kept}) std::ofstream(p) << "x";
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, STDERR_FILENO);
        segrank::RemoveOnTermination guard(first, "interrupted; nothing was changed\n");
        guard.add(second);
        {
            // Held: the signal waits for the end of the block, so this file is still written.
            const segrank::SignalsHeld held;
            ::raise(SIGTERM);
            std::ofstream(dir / "after_raise") << "x";
        }
        ::_exit(0);  // not reached: SIGTERM's default action ends the process
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
    CHECK(WTERMSIG(status) == SIGTERM);
    CHECK_FALSE(fs::exists(first));
    CHECK_FALSE(fs::exists(second));
    CHECK(fs::exists(kept));
    CHECK(fs::exists(dir / "after_raise"));
    CHECK(segrank::test::read_file_text(log) == "interrupted; nothing was changed\n");
}

TEST_CASE("RemoveOnTermination::add_prefixed removes the entries of a folder named with a prefix") {
    // dir/x.npz.tmp-7.q1te8e (a library's own temporary name), dir/x.npz.tmp-7.dir/f (a folder),
    // dir/x.npz (kept: no match), dir/y.npz.tmp-7 (kept).
    const fs::path dir = segrank::test::scratch_dir("signal_guard_prefix");
    std::ofstream(dir / "x.npz.tmp-7.q1te8e") << "x";
    fs::create_directories(dir / "x.npz.tmp-7.dir");
    std::ofstream(dir / "x.npz.tmp-7.dir" / "f") << "x";
    std::ofstream(dir / "x.npz") << "x";
    std::ofstream(dir / "y.npz.tmp-7") << "x";
    const pid_t pid = ::fork();
    REQUIRE(pid >= 0);
    if (pid == 0) {
        segrank::RemoveOnTermination guard{fs::path()};
        guard.add_prefixed(dir, "x.npz.tmp-7");
        guard.add_prefixed(dir, "");            // adds nothing
        guard.add_prefixed(dir, "a/b");         // not a name: adds nothing
        guard.add_prefixed(dir / "none", "x");  // a missing folder: nothing to remove
        ::raise(SIGTERM);
        ::_exit(0);  // not reached
    }
    int status = 0;
    REQUIRE(::waitpid(pid, &status, 0) == pid);
    CHECK(WIFSIGNALED(status));
    CHECK_FALSE(fs::exists(dir / "x.npz.tmp-7.q1te8e"));
    CHECK_FALSE(fs::exists(dir / "x.npz.tmp-7.dir"));
    CHECK(fs::exists(dir / "x.npz"));
    CHECK(fs::exists(dir / "y.npz.tmp-7"));
}

TEST_CASE(
    "RemoveOnTermination and SignalsHeld restore the thread's signal mask: signals blocked before "
    "stay blocked (the signal relay's threads), unblocked ones stay unblocked") {
    namespace fs = std::filesystem;
    const fs::path dir = segrank::test::scratch_dir("signal_cleanup_mask");
    auto blocked = [](int sig) {
        sigset_t now;
        pthread_sigmask(SIG_SETMASK, nullptr, &now);
        return sigismember(&now, sig) == 1;
    };
    sigset_t term, before;
    sigemptyset(&term);
    sigaddset(&term, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &term, &before);  // as start_signal_relay leaves a compute thread
    {
        segrank::RemoveOnTermination guard(dir / "a");
        guard.add(dir / "b");
        guard.add_prefixed(dir, "c");
        CHECK(blocked(SIGTERM));
        {
            const segrank::SignalsHeld held;
            CHECK(blocked(SIGTERM));
            CHECK(blocked(SIGINT));
        }
        CHECK(blocked(SIGTERM));
        CHECK_FALSE(blocked(SIGINT));
    }
    pthread_sigmask(SIG_SETMASK, &before, nullptr);
    CHECK_FALSE(blocked(SIGTERM));
    {
        const segrank::SignalsHeld held;
        CHECK(blocked(SIGTERM));
    }
    CHECK_FALSE(blocked(SIGTERM));
}
