// Peak RSS from /proc/self/status (VmHWM), with getrusage as the fallback.
#include "util/rss.h"

#include <sys/resource.h>

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

}  // namespace segrank
