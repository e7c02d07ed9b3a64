// Model-free search baselines for `segrank tune` (docs/tune.md#search-space): simulated annealing
// over the local moves of a SearchSpace, driven only by measurements, and uniform random search, so
// a benchmark can compare the model-guided rounds loop with them at the same measurement budget.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "tune/candidates.h"
#include "tune/measure.h"

namespace segrank::tune {

/// Knobs of simulated_annealing.
struct AnnealOptions {
    int64_t budget = 100;  ///< measurements (successful or failed), >= 1
    uint64_t seed = 0;     ///< all randomness (moves, acceptance)
    double t_start = 0.1;  ///< initial temperature, in units of ln(runtime) (0.1 ~ 10% slower
                           ///< accepted with probability 1/e)
    double t_end = 0.002;  ///< final temperature (geometric schedule over the budget), > 0
    int64_t batch = 1;     ///< proposals measured per Measurer::measure call (>= 1)
};

/// What a search tried, in measurement order.
struct SearchTrace {
    std::vector<Trial> trials;
    std::optional<int64_t> best;  ///< index of the fastest successful trial (nullopt: none)
    /// best_so_far[i] = fastest runtime (ns) among trials 0..i (+inf before the first success).
    std::vector<double> best_so_far;
};

/// Simulated annealing from the space's default config: each step measures a neighbor() of the
/// current config (never a config measured before; after 100 failed tries a random_config()),
/// accepts it when faster, else with probability exp(-(ln t_new - ln t_cur) / T); failed
/// measurements are recorded and never accepted. Stops after `budget` measurements or when no
/// unmeasured config can be found. Deterministic in (space, measurer, options). Throws
/// segrank::Error on invalid options.
SearchTrace simulated_annealing(const SearchSpace& space, Measurer& measurer,
                                const AnnealOptions& options);

/// Uniform random search: the default config, then distinct random_config() draws, `budget`
/// measurements in all, measured `batch` at a time.
SearchTrace random_search(const SearchSpace& space, Measurer& measurer, int64_t budget,
                          uint64_t seed, int64_t batch = 1);

}  // namespace segrank::tune
