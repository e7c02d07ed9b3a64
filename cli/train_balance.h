// `segrank train --balance-model WORLDS`: the step-cost model of a run (sampling/step_balance.h,
// docs/architecture.md#distribution) printed as JSON instead of training.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trainer/config.h"

namespace segrank::cli {

/// Parses "2,4,8" into distinct world sizes in [1, 65536], in the given order. Throws
/// segrank::Error naming --balance-model and the bad item.
std::vector<int> parse_world_sizes(const std::string& list);

/// For `cfg`'s training graphs (sizes from the collection headers, no graph data read), its batch
/// schedule (sampling.batch_graphs, sampling.seed) over steps [from, the run's last step) and every
/// dist.ownership mode x world size: the modelled step efficiency (mean rank work / the busiest
/// rank's, summed over the steps as scripts/bench_mpi.sh sums step_balance_cpu) with work =
/// nodes x min(K, usable configs) per member. One JSON object on stdout; writes no file. Throws
/// segrank::Error when `from` is negative or not before the run's last step, or the data does not
/// open (Dataset's messages).
int print_balance_model(const RunConfig& cfg, const std::vector<int>& worlds, int64_t from);

}  // namespace segrank::cli
