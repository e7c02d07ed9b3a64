// Out-of-line failure path of SEGRANK_ASSERT.
#include "gnn/core/check.h"

namespace segrank::detail {

void assert_fail(const char* expr, const char* file, int line, const std::string& msg) {
    throw std::logic_error(str("internal error at ", file, ":", line, ": assertion `", expr,
                               "` failed", msg.empty() ? "" : ": ", msg));
}

}  // namespace segrank::detail
