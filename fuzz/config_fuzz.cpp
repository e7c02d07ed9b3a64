// TOML run config with --set overrides (trainer/config.cpp, read only). Input: TOML text, then
// optionally NUL-separated `section.key=value` overrides. A config that loads must dump to TOML
// that loads again to the same dump (the run directory's config.toml relies on it).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <vector>

#include "fuzz/fuzz_util.h"
#include "gnn/core/check.h"
#include "trainer/config.h"

using namespace segrank;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const std::string_view in = fuzz::as_text(data, size);
    const size_t nul = in.find('\0');
    const std::string_view toml = in.substr(0, nul);
    std::vector<std::string> overrides;
    for (size_t at = nul; at != std::string_view::npos && at < in.size();) {
        const size_t next = in.find('\0', at + 1);
        overrides.emplace_back(in.substr(
            at + 1, next == std::string_view::npos ? std::string_view::npos : next - at - 1));
        at = next;
    }
    RunConfig cfg;
    try {
        cfg = load_config_string(toml, "fuzz.toml", overrides);
    } catch (const Error&) {
        return 0;
    }
    const std::string dumped = dump_config(cfg);
    try {
        const RunConfig again = load_config_string(dumped, "dumped.toml");
        if (dump_config(again) != dumped) std::abort();  // the dump is not a fixed point
    } catch (const Error&) {
        std::abort();  // a loaded config's own dump does not load
    }
    return 0;
}
