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
/// mismatch rank 0's text is broadcast too and every rank throws segrank::Error: a differing rank
/// names `what`, itself and its first line that differs from rank 0's (both versions); the others
/// name the differing ranks. Returns normally on every rank when all texts are equal.
void check_ranks_agree(Communicator& comm, const std::string& what, const std::string& text);

}  // namespace segrank
