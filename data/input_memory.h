// Memory of input reads (docs/files.md#zip-and-npy-layers): the bound on the bytes one array read
// from an npz or HDF5 input may take in memory, and out-of-memory while reading a graph file turned
// into an error naming that file.
#pragma once
#include <cstdint>
#include <filesystem>
#include <new>
#include <string>
#include <string_view>

#include "gnn/core/check.h"

namespace segrank {

/// Environment variable overriding the bound of max_input_array_bytes() (a positive number of
/// bytes); tests lower it, a machine with swap may raise it.
inline constexpr const char* kMaxInputBytesEnv = "SEGRANK_MAX_INPUT_BYTES";

/// The bound on one input array and where it comes from (for messages).
struct InputArrayBound {
    uint64_t bytes = 0;  ///< at most this many bytes in memory per array
    std::string source;  ///< "the physical memory", "the address-space limit (ulimit -v)" or the
                         ///< environment variable
};

/// The bytes one array read from an input file may take in memory: SEGRANK_MAX_INPUT_BYTES when
/// set, else the machine's physical memory (sysconf(_SC_PHYS_PAGES) x page size), or the
/// address-space limit (RLIMIT_AS, `ulimit -v`) when that is smaller. An array declaring more
/// cannot be held, so it is refused before anything is allocated. Throws segrank::Error naming
/// the variable when it is set to anything but a positive integer.
InputArrayBound max_input_array_bytes();

/// Throws segrank::Error unless `bytes` (what the array `what` of `where` declares it needs in
/// memory) is at most max_input_array_bytes(): "<where>: <what> declares N bytes (X MiB) in
/// memory, more than the M bytes (Y MiB) allowed for one input array (<source>; ...)".
void check_input_array_bytes(uint64_t bytes, const std::string& where, std::string_view what);

/// Runs `read` (a read of the graph file `path`) and returns its result; a std::bad_alloc it throws
/// becomes segrank::Error "<path>: out of memory while reading this graph file ...", so the file
/// that could not be held is named (not a bare "std::bad_alloc").
template <typename F>
auto naming_file_on_oom(const std::filesystem::path& path, F&& read) -> decltype(read()) {
    try {
        return read();
    } catch (const std::bad_alloc&) {
        throw Error(str(path.string(),
                        ": out of memory while reading this graph file (an allocation failed: the "
                        "graph needs more memory than this process can get)"));
    }
}

}  // namespace segrank
