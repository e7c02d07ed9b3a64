// The option parsing every subcommand shares: cxxopts parse, `-h/--help`, and cxxopts errors turned
// into segrank::Error naming the option and pointing to --help.
#pragma once
#include <cxxopts.hpp>
#include <optional>
#include <string>

namespace segrank::cli {

/// Parses argv with `options` (program name e.g. "segrank stats"). With -h/--help prints the
/// help text to stdout and returns nullopt (the command then exits 0). Throws segrank::Error
/// "<cxxopts' message> (see <program> --help)" for an unknown option or a missing value,
/// "--chunk: expected a number, got 'abc' (see <program> --help)" for a mistyped one,
/// and "unexpected argument 'X' (see <program> --help)" for a positional argument no option takes.
std::optional<cxxopts::ParseResult> parse_or_help(cxxopts::Options& options, int argc, char** argv);

/// The integer option `--<name>` as an OpenMP thread count. With zero_is_all, 0 means every core
/// (std::thread::hardware_concurrency(), at least 1) and the allowed range is 0..kMaxThreads
/// (gnn/core/parallel.h), else 1..kMaxThreads. Throws segrank::Error "--threads: expected 0 (all
/// cores) to 1024, got -3" outside the range.
int thread_option(const cxxopts::ParseResult& args, const std::string& name = "threads",
                  bool zero_is_all = true);

}  // namespace segrank::cli
