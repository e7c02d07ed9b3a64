// The option parsing every subcommand shares: cxxopts parse, `-h/--help`, and cxxopts errors turned
// into segrank::Error naming the option and pointing to --help.
#pragma once
#include <cxxopts.hpp>
#include <optional>

namespace segrank::cli {

/// Parses argv with `options` (program name e.g. "segrank stats"). With -h/--help prints the
/// help text to stdout and returns nullopt (the command then exits 0). Throws segrank::Error
/// "<cxxopts' message> (see <program> --help)" for an unknown option, a missing or mistyped value,
/// and "unexpected argument 'X' (see <program> --help)" for a positional argument no option takes.
std::optional<cxxopts::ParseResult> parse_or_help(cxxopts::Options& options, int argc, char** argv);

}  // namespace segrank::cli
