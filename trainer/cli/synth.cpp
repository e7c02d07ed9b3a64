// `segrank synth`: placeholder until its issue lands (throws a clear "not implemented" error).
#include "gnn/core/check.h"
#include "trainer/cli/commands.h"

namespace segrank::cli {

int run_synth(int /*argc*/, char** /*argv*/) {
    throw Error("'segrank synth' is not implemented yet in this build");
}

}  // namespace segrank::cli
