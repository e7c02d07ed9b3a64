// Shared helpers of the hlo tests: cached fixture decoding and SHA-256 of raw bytes via sha256sum.
#pragma once
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <string>

#include "data/hlo/proto_reader.h"
#include "tests/support/test_paths.h"

namespace segrank::test {

/// First 16 hex digits of the SHA-256 of `size` bytes at `data` (written to a scratch file and
/// hashed with coreutils sha256sum; OpenSSL is not a dependency).
inline std::string sha256_prefix16(const void* data, size_t size) {
    const auto dir = scratch_dir("sha");
    const auto file = dir / "bytes.bin";
    {
        std::ofstream out(file, std::ios::binary);
        out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
    }
    const CommandResult r = run_command("sha256sum '" + file.string() + "'");
    REQUIRE(r.exit_code == 0);
    return r.output.substr(0, 16);
}

/// Reads a file of ../shared/data/xla_tuning once per test process.
inline const hlo::TuningFile& fixture(const std::filesystem::path& data_dir,
                                      const std::string& name) {
    static std::map<std::string, hlo::TuningFile> cache;
    auto it = cache.find(name);
    if (it == cache.end())
        it = cache.emplace(name, hlo::read_tuning_file(data_dir / "xla_tuning" / name)).first;
    return it->second;
}

}  // namespace segrank::test
