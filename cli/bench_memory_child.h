// The child process of one `segrank bench --memory` case (cli/bench_memory.cpp): started without a
// shell, its stdout read whole, and stopped with its run folder removed when a signal ends bench.
#pragma once
#include <filesystem>
#include <string>
#include <vector>

namespace segrank::cli::memory_bench {

/// What a case's child printed on stdout and how it ended (a waitpid status).
struct ChildResult {
    std::string out;
    int status = 0;
};

/// Runs `argv` (argv[0] an executable path; no shell) with the signal mask segrank was started
/// with, reads its stdout to the end, waits for it and removes `run_dir` (made by the caller for
/// the child, however the child ended). While it runs, SIGINT, SIGTERM or SIGHUP
/// to this process (alone or with its group) kill the child (SIGKILL), wait for it, remove
/// `run_dir`, print `interrupted` on stderr and end
/// this process by the signal (128 + signal), so neither the child nor its folder stays. The
/// child should ask for SIGKILL when its parent dies (PR_SET_PDEATHSIG), for a SIGKILL to bench.
/// Throws segrank::Error naming `argv[0]` when the child cannot be started.
ChildResult run_case_child(const std::vector<std::string>& argv,
                           const std::filesystem::path& run_dir, const std::string& interrupted);

}  // namespace segrank::cli::memory_bench
