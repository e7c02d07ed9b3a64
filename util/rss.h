// Resident set size of this process, the one reader for training logs, reports and benchmarks.
#pragma once
#include <cstdint>

namespace segrank {

/// Peak resident set size of this process in MiB: VmHWM of /proc/self/status (Linux), else the
/// ru_maxrss of getrusage. Since reset_peak_rss(), when that call took effect.
double peak_rss_mb();

/// Restarts the peak (VmHWM) at the current resident set (Linux >= 4.0, /proc/self/clear_refs);
/// does nothing where unsupported. For benchmarks that measure several phases in one process.
void reset_peak_rss();

/// The machine's physical memory in bytes (sysconf(_SC_PHYS_PAGES) x page size); UINT64_MAX when
/// the system does not tell.
uint64_t physical_memory_bytes();

}  // namespace segrank
