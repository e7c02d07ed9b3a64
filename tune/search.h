// Model-free search baselines for `segrank tune` (docs/tune.md#search-space): simulated annealing
// over the local moves of a SearchSpace, driven only by measurements, and uniform random search, so
// a benchmark can compare the model-guided rounds loop with them at the same measurement budget.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "tune/candidates.h"
#include "tune/measure.h"

namespace segrank::tune {

/// How many configs each round of a tuning run measures (`segrank tune --batch`,
/// docs/tune.md#choosing-the-batch). Fixed: every round `cap`. Grow: a round taken after
/// `measured` measurements (the default's included) holds ceil(measured / 10) configs, at least
/// min(2, cap) and at most `cap`: early rounds are small, so the model is refit after every
/// measurement or two while it knows little of the module; each later round adds at most about a
/// tenth to what was measured, so the rounds grow as each one adds less to what the model knows.
/// Exploration (explore()): a fixed round gives a quarter of itself to it; growing rounds keep a
/// quarter of the whole run's measurements for it, exploring only in the rounds that start below
/// that share. Size and exploration depend on the measurements taken only (and which of them were
/// exploration picks), so a resumed run continues the same schedule.
struct RoundSchedule {
    int64_t cap = 1;    ///< configs per round (fixed) or the most per round (grow), >= 1
    bool grow = false;  ///< rounds grow with the measurements taken

    static RoundSchedule fixed(int64_t b) { return {b, false}; }
    /// Grow rounds up to `cap` configs (the spelling `grow` uses kGrowCap).
    static RoundSchedule growing(int64_t cap) { return {cap, true}; }
    static constexpr int64_t kGrowCap = 8;       ///< the cap of `grow` without `:CAP`
    static constexpr int64_t kGrowDivisor = 10;  ///< a round adds at most ~1/10 of the measured
    /// 1 / the share of exploration picks: of each fixed round, of the whole run with grow
    static constexpr int64_t kExploreDivisor = 4;

    /// Configs in the round after `measured` (>= 0) measurements: >= 1, <= cap.
    int64_t size(int64_t measured) const;
    /// Exploration picks of a round of `k` (>= 1) configs taken after `measured` (>= 0)
    /// measurements (the default's and failed ones included), `explored` (0..measured) of which
    /// were exploration picks; the other k - explore() go to the best-ranked configs. A round of 1
    /// explores nothing; a larger one explores max(1, k / 4), and with grow only when fewer than a
    /// quarter of the measurements so far were exploration picks (4 explored < measured), else 0:
    /// rounds of 2 then alternate one exploring round with one of two best-ranked picks. Throws
    /// segrank::Error on counts out of range.
    int64_t explore(int64_t k, int64_t measured, int64_t explored) const;
    /// The spelling parse_round_schedule reads back: "5", "grow:8".
    std::string spelling() const;
};

/// Parses a --batch value: a count B >= 1 (fixed rounds of B), `grow` (rounds growing up to
/// RoundSchedule::kGrowCap) or `grow:CAP` (CAP >= 2). Throws segrank::Error naming `option` and
/// the accepted spellings.
RoundSchedule parse_round_schedule(const std::string& text, const std::string& option = "--batch");

/// Knobs of simulated_annealing.
struct AnnealOptions {
    int64_t budget = 100;  ///< measurements (successful or failed), >= 1
    uint64_t seed = 0;     ///< all randomness (moves, acceptance)
    double t_start = 0.1;  ///< initial temperature, in units of ln(runtime) (0.1 ~ 10% slower
                           ///< accepted with probability 1/e)
    double t_end = 0.002;  ///< final temperature (geometric schedule over the budget), > 0
    RoundSchedule batch;   ///< proposals measured per Measurer::measure call (a round)
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
/// measurements in all, measured in rounds of `batch` (its size after the trials so far).
SearchTrace random_search(const SearchSpace& space, Measurer& measurer, int64_t budget,
                          uint64_t seed, RoundSchedule batch = RoundSchedule::fixed(1));

}  // namespace segrank::tune
