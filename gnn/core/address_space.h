// The address-space floor of the commands that run oneDNN matmuls (docs/config.md#out-of-memory):
// under a tight `ulimit -v`, oneDNN 2.x does not check the mmap of its JIT code buffers and
// crashes, so those commands refuse a limit below what they need at start-up.
#pragma once
#include <cstdint>
#include <string_view>

namespace segrank {

/// Smallest address space (bytes) with which a process running oneDNN matmuls on `threads`
/// OpenMP threads starts safely: the libraries, oneDNN's JIT code buffers and a small model
/// (measured: a tiny train / evaluate needs about 103 MiB on one thread and about 8 MiB more per
/// further thread, its stack), plus a margin. `stack_bytes` is one thread's stack (RLIMIT_STACK).
uint64_t matmul_address_space_floor(int threads, uint64_t stack_bytes);

/// Throws segrank::Error when the process's address-space limit (RLIMIT_AS, `ulimit -v`) is below
/// matmul_address_space_floor(num_threads(), RLIMIT_STACK): "the address-space limit (ulimit -v)
/// is N MiB; segrank <command> needs at least M MiB (oneDNN's JIT code buffers and the libraries)
/// with T OpenMP thread(s) ...". No limit (or any limit at or above the floor) passes. Call it
/// after set_num_threads and before the first output file is written.
void check_address_space_for_matmuls(std::string_view command);

}  // namespace segrank
