// The address-space floor of the commands that run oneDNN matmuls (docs/config.md#out-of-memory):
// under a tight `ulimit -v`, oneDNN 2.x does not check the mmap of its JIT code buffers and
// crashes, so those commands refuse a limit below what they need at start-up, and the engine keeps
// a headroom free for oneDNN while it runs.
#pragma once
#include <cstddef>
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

/// Address space (bytes, 16 MiB) kept free for oneDNN under a finite RLIMIT_AS: the JIT code and
/// profiling buffers a new matmul primitive maps without checking the result.
uint64_t matmul_headroom_bytes();

/// True when a process with `mapped` bytes of address space can map `bytes` more under the limit
/// `limit` (bytes) and still leave matmul_headroom_bytes() free.
bool leaves_matmul_headroom(uint64_t mapped, uint64_t bytes, uint64_t limit);

/// Throws std::bad_alloc when RLIMIT_AS (`ulimit -v`) is finite and mapping `bytes` more would
/// leave less than matmul_headroom_bytes() (mapped: /proc/self/statm). Called by the tensor
/// allocator before it maps a large block and by the matmul before it creates a new oneDNN
/// primitive (bytes 0); the commands turn the std::bad_alloc into their "out of memory while ..."
/// message. Without a limit it makes one getrlimit call and reads nothing.
void check_matmul_headroom(size_t bytes);

}  // namespace segrank
