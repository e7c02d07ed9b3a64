// Paths tests need: the shared real-data folder, the source tree, a scratch folder, the binary.
#pragma once
#include <filesystem>
#include <optional>
#include <string>

namespace segrank::test {

/// `../shared/data` beside the checkout, or nullopt when absent (tests then skip with a message).
std::optional<std::filesystem::path> shared_data_dir();
/// `../shared` beside the checkout (peers, spec), or nullopt when absent.
std::optional<std::filesystem::path> shared_dir();
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

/// 'text' for a shell command line (test paths hold no single quote). Built by appending, which also
/// keeps GCC 12's -Wrestrict false positive on "'" + std::string out of the test build.
inline std::string sq(const std::string& text) {
    std::string out;
    out.reserve(text.size() + 2);
    out += '\'';
    out += text;
    out += '\'';
    return out;
}

}  // namespace segrank::test

/// Skip the rest of the test case with a visible message when shared data is absent.
#define SEGRANK_REQUIRE_SHARED_DATA(var)                                              \
    auto var##_opt = ::segrank::test::shared_data_dir();                              \
    if (!var##_opt) {                                                                 \
        MESSAGE("SKIPPED: ../shared/data not found beside the checkout");             \
        return;                                                                       \
    }                                                                                 \
    const std::filesystem::path var = *var##_opt
