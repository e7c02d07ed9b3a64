// How an exception escaping a subcommand becomes a message and an exit status (cli/main.cpp and
// the MPI-aware guard of `segrank train`, trainer/comm.cpp): docs/files.md#exit-status.
#pragma once
#include <exception>
#include <string>

namespace segrank {

/// What to print for a failed command and the process exit status.
struct ExitReport {
    int code = 3;         ///< 1: an error of the input or the environment; 3: an internal error
    std::string message;  ///< one line, without the "segrank <command>: " prefix
};

/// The message of a std::bad_alloc that no command named more precisely: "error: out of memory
/// (an allocation failed)", and under an address-space limit (`ulimit -v`, RLIMIT_AS) "...; the
/// address-space limit (ulimit -v) is N MiB, of which M MiB were mapped: raise the limit)" (M from
/// /proc/self/statm). Never throws std::bad_alloc for the numbers it reads (stdio, no heap).
std::string out_of_memory_message();

/// Classifies `e` (a non-null exception pointer): segrank::Error is "error: <what>", exit 1;
/// std::filesystem::filesystem_error (the OS refused a path: read-only, not a directory, no
/// permission, no space) is "error: <operation> '<path>': <reason>" ("error: <path>: is a symbolic
/// link loop (ELOOP: ...)" for ELOOP), exit 1; std::bad_alloc is
/// "error: out of memory ...", exit 1; any other std::exception is "internal error: <what>" and
/// anything else "internal error: unknown exception", exit 3. Control characters in the message
/// other than line breaks (an ESC, a DEL) are shown escaped (echo_lines, util/user_input.h).
/// Never throws.
ExitReport classify_exception(std::exception_ptr e) noexcept;

}  // namespace segrank
