// The rounds of `segrank tune` (docs/tune.md): measure the compiler default, then rounds of B
// configs (the cost model's best unmeasured ones plus exploration where ensemble members disagree),
// refit on this module's measured runtimes, re-rank, until the budget is spent. Every measurement
// is appended to DIR/measurements.jsonl and flushed as it is taken; --resume continues from DIR
// and measures nothing twice.
#pragma once
#include <atomic>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "segrank/cost_model.h"
#include "tune/candidates.h"
#include "tune/config.h"
#include "tune/search.h"
#include "util/json.h"

namespace segrank::cli {

/// One measured config: a runtime (ns) or why it could not be measured.
struct Measured {
    std::optional<double> runtime_ns;  ///< ns, finite and > 0; set when measured
    std::string error;                 ///< non-empty when not measured
};

/// The measurement seam: measures `configs` (configs of the graph as their rows, tune/config.h)
/// and returns one result per config, in the same order. May throw segrank::Error for a failure
/// of the whole backend.
using MeasureFn = std::function<std::vector<Measured>(std::span<const tune::Config> configs)>;

/// Default --pool (proposals scored per round with --candidates search) when 8 x --batch is
/// smaller: the model ranks thousands of proposals per round for the cost of one measurement's
/// compilation; at 20 measurements 2048 beats 64 on both search cases of scripts/bench_tune.py
/// (docs/benchmarks.md#autotuning-scriptsbench_tunepy).
inline constexpr int64_t kDefaultPool = 2048;
/// Largest --pool: a round scores the whole pool with the cost model, so its time and memory grow
/// with it; 65536 is 32 times the default pool (docs/tune.md).
inline constexpr int64_t kMaxPool = 65536;
/// A pool larger than this gets a line on stdout before it is scored (scoring it takes a while).
inline constexpr int64_t kAnnouncedPool = 4096;

/// What refit() trains between rounds (--refit).
enum class RefitMode { kNone, kHead, kFull };
/// "none" / "head" / "full" -> RefitMode; throws segrank::Error naming --refit otherwise.
RefitMode parse_refit(const std::string& s);

/// Who chooses the configs to measure (--strategy): the cost model's rounds (tune_rounds), or a
/// model-free baseline of tune/search.h over the module's search space (tune_model_free):
/// simulated annealing or uniform random search.
enum class Strategy { kModel, kAnneal, kRandom };
/// "model" / "anneal" / "random" -> Strategy; throws segrank::Error naming --strategy otherwise.
Strategy parse_strategy(const std::string& s);
/// The --strategy spelling of s.
const char* strategy_name(Strategy s);

/// Settings of one tuning run.
struct TuneOptions {
    int64_t budget =
        0;  ///< total measurements, the default's and earlier runs' (--resume) included
    /// configs measured per round (--batch: B fixed, or growing with the measurements taken)
    tune::RoundSchedule batch = tune::RoundSchedule::fixed(8);
    RefitMode refit = RefitMode::kNone;
    int refit_steps = 200;      ///< AdamW steps per refit
    double refit_lr = 1e-3;     ///< refit learning rate
    uint64_t seed = 0;          ///< exploration stream
    std::filesystem::path out;  ///< DIR
    bool resume = false;
    std::string measure;   ///< the --measure text, recorded in DIR/tune.json
    double noise = 0.0;    ///< hwmodel: --noise sigma, recorded in DIR/tune.json
    bool progress = true;  ///< one line per round on stdout
    /// Set (to the signal number) by a SIGINT/SIGTERM handler: the run stops after the measurement
    /// in progress, keeping every measurement taken. Null = never.
    const std::atomic<int>* stop = nullptr;
    /// --candidates search: each round's candidates are proposals of this generator (configs that
    /// need not be rows of the graph's file), scored through a graph holding them; null =
    /// --candidates recorded (the file's own configs).
    const tune::CandidateGenerator* generator = nullptr;
    int64_t pool = 0;  ///< search: proposals scored per round (0 = max(kDefaultPool, 8 B); B the
                       ///< most configs a round may hold)
    Strategy strategy = Strategy::kModel;  ///< recorded in DIR/tune.json
    /// --memory-mb: the cost model's scoring budget in MiB (ScoreOptions::memory_mb; 0 = the
    /// checkpoint's eval.memory_mb).
    int64_t memory_mb = 0;
};

/// How the run ended.
struct TuneResult {
    int64_t measured = 0;      ///< measurements in DIR (all runs)
    int64_t measured_now = 0;  ///< measurements taken by this call
    int64_t rounds = 0;        ///< last round number
    int64_t default_config = 0;
    std::optional<double> default_ns;
    int64_t best_config = -1;  ///< recorded index of the best config; -1 when it is not a row of
                               ///< the file or nothing was measured successfully
    std::optional<tune::Config> best;  ///< the best config's rows
    std::optional<double> best_ns;
    int64_t failed = 0;       ///< measurements in DIR that failed (all runs)
    std::string first_error;  ///< the reason of the first of them, in DIR order
    int interrupted_by = 0;   ///< the signal that stopped the run, 0 when it completed
};

/// The compiler's default config of g and how it was found (docs/tune.md#the-default): layout: the
/// first config whose 18 slots are -1 on every node; tile: the first config whose recorded runtime
/// equals its config_runtime_normalizer (TpuGraphs stores the is_default run's time there); else
/// config 0, with `rule` saying so.
int64_t default_config(const Graph& g, std::string* rule);

/// A config spelled for XLA: layout [{"node": i, "output": "{1,0}", "input": ..., "kernel": ...}]
/// per configurable node (`nodes` = node_config_ids; "default" for a tensor left to the
/// compiler); tile {"kernel_bounds": [..], "output_bounds": [..], "input_bounds": [..]}.
Json xla_config(const tune::Config& c, std::span<const int64_t> nodes);

/// Runs (or with o.resume continues) the tuning of g in o.out. Throws segrank::Error for bad
/// options, a DIR that exists without --resume or holds another graph's measurements, a torn or
/// malformed measurements.jsonl line other than the last, or a measurement of an unknown config.
/// `record` is g's record (structure, recorded rows and runtimes; tune::tune_graph of it).
TuneResult tune_rounds(CostModel& model, const Graph& g, const tune::TuneGraph& record,
                       const MeasureFn& measure, const TuneOptions& o);

/// The model-free run of o.strategy (kAnneal or kRandom) on g in o.out, with the files of
/// tune_rounds: round 0 measures the compiler default (as tune_rounds does), then
/// tune::simulated_annealing or tune::random_search over `space` (seeded by o.seed, rounds of
/// o.batch: one measure call per round) spends the rest of o.budget; their start, the space's
/// default, is not measured twice when it is the recorded default. Every line has "predicted":
/// null. Throws segrank::Error for bad options, o.resume (these searches do not resume), a DIR
/// that exists, or o.generator null (the configs are searched, so DIR is a --candidates search
/// directory).
TuneResult tune_model_free(const Graph& g, const tune::TuneGraph& record, const MeasureFn& measure,
                           const TuneOptions& o, const tune::SearchSpace& space);

/// A runtime in ns as tune's progress and closing lines show it: whole nanoseconds as an integer
/// ("671737123"), a fraction below 1e6 ns with up to 6 significant digits ("1.5"), beyond 1e18 ns
/// in exponent form ("1e+300"); the same text wherever one value is shown.
std::string runtime_text(double ns);

}  // namespace segrank::cli
