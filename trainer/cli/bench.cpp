// `segrank bench`: placeholder until its issue lands (throws a clear "not implemented" error).
#include "gnn/core/check.h"
#include "trainer/cli/commands.h"

namespace segrank::cli {

int run_bench(int /*argc*/, char** /*argv*/) {
    throw Error("'segrank bench' is not implemented yet in this build");
}

}  // namespace segrank::cli
