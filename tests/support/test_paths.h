// Paths tests need: the shared real-data folder, the source tree, a scratch folder, the binary.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace segrank::test {

/// `../shared/data` beside the checkout, or nullopt when absent (tests then skip with a message).
std::optional<std::filesystem::path> shared_data_dir();
/// `../shared` beside the checkout (peers, spec), or nullopt when absent. The environment variable
/// SEGRANK_SHARED_DIR, when set, replaces the location configured at build time.
std::optional<std::filesystem::path> shared_dir();
/// The folder shared_dir() looks at (whether or not it exists), for messages.
std::filesystem::path shared_dir_location();
/// True when the environment variable SEGRANK_EXPECT_SHARED_DATA is set to a value other than "" or
/// "0" (`.ci/run` sets it when ../shared/data is present): a missing shared folder is then a
/// failure.
bool shared_data_expected();
/// The repository root (for configs/).
std::filesystem::path source_dir();
/// The path of the built `segrank` binary (for CLI tests).
std::filesystem::path segrank_binary();
/// A fresh empty scratch directory under the build tree, unique per call.
std::filesystem::path scratch_dir(const std::string& name);

/// Runs a shell command, returns {exit code, combined stdout+stderr}.
struct CommandResult {
    int exit_code = 0;
    std::string output;
};
CommandResult run_command(const std::string& command);

/// Writes `script` to dir/signals.sh and runs it with bash, its stderr (bash's job notices, "[1]+
/// Interrupt ...", when the script uses `set -m`) kept in dir/jobs.txt, out of the result: for
/// tests that signal background jobs, which need job control so that SIGINT is not ignored.
CommandResult run_bash_script(const std::filesystem::path& dir, const std::string& script);

/// Runs `segrank ARGS` from the repository root with OMP_NUM_THREADS=`threads`; `prefix` goes
/// before the binary (e.g. "ulimit -v 100000; " or "env X=1 "). Returns run_command's result.
CommandResult run_segrank_in_source(const std::string& args, int threads = 1,
                                    const std::string& prefix = "");

/// Runs `segrank ARGS` in the folder `dir` with one thread; the result holds stdout and stderr.
CommandResult run_segrank_in(const std::filesystem::path& dir, const std::string& args);

/// Starts `sh -c command` as a child with SIGINT at its default (as from a terminal: a shell's
/// background job ignores SIGINT), stdout and stderr to `log`; returns its pid (-1 when fork
/// fails). The caller waits for it (waitpid).
int spawn_shell_with_default_sigint(const std::string& command, const std::filesystem::path& log);

/// Polls every 50 ms, up to 60 s, until `path` exists or child `pid` exits; returns true when the
/// child exited (its wait status in `status`), false when the file appeared or the time ran out.
bool child_exited_before_file(int pid, const std::filesystem::path& path, int& status);

/// What sigint_once_file_exists saw: `started` false when the child could not start, exited before
/// `file` appeared (its output in `output`) or the 60 s ran out; else the child's wait status after
/// the SIGINT and its output (stdout and stderr, from the log file).
struct InterruptedRun {
    bool started = false;
    int status = 0;
    std::string output;
};

/// Starts `command` as spawn_shell_with_default_sigint does (output to `log`), waits until `file`
/// exists, sends the child SIGINT (as Ctrl-C would) and waits for it to end.
InterruptedRun sigint_once_file_exists(const std::string& command,
                                       const std::filesystem::path& file,
                                       const std::filesystem::path& log);

/// The bytes of file `p`; "" when it does not exist or cannot be read (tests then fail on content).
std::string read_file_text(const std::filesystem::path& p);

/// Replaces file `p` with `text` (created when absent).
void write_file_text(const std::filesystem::path& p, const std::string& text);

/// `s` with the first occurrence of `from` replaced by `to`; "(no FROM)" when `from` does not
/// occur, so that a fixture edit that no longer applies fails the test instead of passing unedited.
std::string replaced_first(std::string s, const std::string& from, const std::string& to);

/// True when `what` occurs in `text`.
inline bool contains_text(const std::string& text, const std::string& what) {
    return text.find(what) != std::string::npos;
}

/// True when a `python3` is on PATH (script tests skip with a message otherwise).
bool have_python3();

/// 'text' for a shell command line (test paths hold no single quote). Built by appending, which
/// also keeps GCC 12's -Wrestrict false positive on "'" + std::string out of the test build.
inline std::string sq(const std::string& text) {
    std::string out;
    out.reserve(text.size() + 2);
    out += '\'';
    out += text;
    out += '\'';
    return out;
}

}  // namespace segrank::test

/// Binds `var` to the shared data folder. When it is absent, the rest of the test case is skipped
/// with the message "SKIPPED: ...", which ctest's SKIP_REGULAR_EXPRESSION (tests/CMakeLists.txt)
/// turns into a skipped test; with shared_data_expected() the test fails instead (no "SKIPPED: "
/// in its output, so ctest counts it as failed).
#define SEGRANK_REQUIRE_SHARED_DATA(var)                                                      \
    auto var##_opt = ::segrank::test::shared_data_dir();                                      \
    if (!var##_opt) {                                                                         \
        const std::string var##_where =                                                       \
            (::segrank::test::shared_dir_location() / "data").string();                       \
        if (::segrank::test::shared_data_expected())                                          \
            FAIL("shared data expected (SEGRANK_EXPECT_SHARED_DATA is set) but not found: ",  \
                 var##_where);                                                                \
        MESSAGE("SKIPPED: ../shared/data not found beside the checkout (", var##_where, ")"); \
        return;                                                                               \
    }                                                                                         \
    const std::filesystem::path var = *var##_opt
