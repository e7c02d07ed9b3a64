// parse_or_help (see options.h).
#include "cli/options.h"

#include <cstdio>

#include "gnn/core/check.h"

namespace segrank::cli {

std::optional<cxxopts::ParseResult> parse_or_help(cxxopts::Options& options, int argc,
                                                  char** argv) {
    const std::string see = str(" (see ", options.program(), " --help)");
    std::optional<cxxopts::ParseResult> args;
    try {
        args = options.parse(argc, argv);
    } catch (const cxxopts::exceptions::exception& e) {
        // Unknown options, missing or mistyped values: the user's mistake, not an internal error.
        throw Error(e.what() + see);
    }
    if (args->count("help")) {
        std::printf("%s\n", options.help().c_str());
        return std::nullopt;
    }
    SEGRANK_CHECK(args->unmatched().empty(), "unexpected argument '", args->unmatched().front(),
                  "'", see);
    return args;
}

}  // namespace segrank::cli
