// Startup check that every rank of a job runs the same thing (docs/architecture.md#distribution):
// a multi-host run with one stale host (another config, a data root missing a graph) would
// otherwise hang in a collective of another length, corrupt memory, or train each rank on other
// data and exit 0.
#pragma once
#include <string>

#include "trainer/comm.h"

namespace segrank {

/// Collective. Compares `text` (one item per line, e.g. the effective config or a list of graphs)
/// with rank 0's: a 64-bit hash is broadcast from rank 0 and a per-rank mismatch flag summed, with
/// fixed-length collectives only, so it cannot hang or corrupt whatever the ranks hold. On a
/// mismatch rank 0's text and the lowest differing rank's are broadcast too, and every rank throws
/// the same segrank::Error naming `what`, the differing ranks and the first line where the lowest
/// of them differs from rank 0 (both versions): whichever rank aborts the job first, its message
/// has the detail. Returns normally on every rank when all texts are equal.
void check_ranks_agree(Communicator& comm, const std::string& what, const std::string& text);

}  // namespace segrank
