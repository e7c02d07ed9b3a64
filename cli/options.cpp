// parse_or_help (see options.h).
#include "cli/options.h"

#include <algorithm>
#include <cstdio>
#include <thread>

#include "gnn/core/check.h"
#include "gnn/core/parallel.h"

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

int thread_option(const cxxopts::ParseResult& args, const std::string& name, bool zero_is_all) {
    const int n = args[name].as<int>();
    const int lo = zero_is_all ? 0 : 1;
    SEGRANK_CHECK(n >= lo && n <= kMaxThreads, "--", name, ": expected ",
                  zero_is_all ? "0 (all cores) to " : "1 to ", kMaxThreads, ", got ", n);
    if (n > 0) return n;
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace segrank::cli
