// Peak RSS from /proc/self/status (VmHWM), with getrusage as the fallback.
#include "util/rss.h"

#include <sys/resource.h>
#include <unistd.h>

#include <fstream>
#include <string>

namespace segrank {

double peak_rss_mb() {
    std::ifstream f("/proc/self/status");
    for (std::string line; std::getline(f, line);) {
        if (line.rfind("VmHWM:", 0) != 0) continue;
        try {
            return std::stod(line.substr(6)) / 1024.0;  // "VmHWM:   123456 kB"
        } catch (const std::exception&) {
            break;
        }
    }
    rusage ru{};
    getrusage(RUSAGE_SELF, &ru);
    return static_cast<double>(ru.ru_maxrss) / 1024.0;  // kB on Linux
}

void reset_peak_rss() {
    std::ofstream f("/proc/self/clear_refs");
    f << "5";  // 5: reset the peak RSS to the current RSS
}

uint64_t physical_memory_bytes() {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0) return UINT64_MAX;  // unknown: no bound from the machine
    return static_cast<uint64_t>(pages) * static_cast<uint64_t>(page);
}

}  // namespace segrank
