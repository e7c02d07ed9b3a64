// Ranking metrics (docs/metrics.md): Kendall tau-b (Knight's O(c log c) algorithm, scipy
// semantics), ordered pair accuracy, slowdown@K, the Kaggle collection scores, and eval.indices
// restriction. Depends on gnn/core and eval/submission.h (top_configs: the one "scores -> predicted
// order" function shared with `segrank predict`, see evaluate_graph's tie policy).
#pragma once
#include <cstdint>
#include <filesystem>
#include <limits>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/graph.h"
#include "gnn/core/check.h"
#include "util/json.h"

namespace segrank {

/// Pair statistics of two equally long vectors x, y over all c*(c-1)/2 pairs (Knight 1966):
/// `x_ties` pairs tied in x, `y_ties` tied in y, `joint_ties` tied in both, `discordant` pairs
/// ordered strictly oppositely. Concordant = total - x_ties - y_ties + joint_ties - discordant.
struct PairCounts {
    int64_t total = 0;
    int64_t x_ties = 0;
    int64_t y_ties = 0;
    int64_t joint_ties = 0;
    int64_t discordant = 0;

    int64_t concordant() const { return total - x_ties - y_ties + joint_ties - discordant; }
};

/// Knight's algorithm in O(c log c): sort by (x, y), count discordant pairs as the strict
/// inversions of y by merge sort. x, y: [c], finite (checked: throws segrank::Error otherwise).
PairCounts count_pairs(std::span<const double> x, std::span<const double> y);

/// Kendall tau-b between x and y ([c] each, same length, else segrank::Error), equal to
/// `scipy.stats.kendalltau(x, y)` (default variant 'b'):
///   (concordant - discordant) / sqrt((total - x_ties) * (total - y_ties)), clipped to [-1, 1].
/// Returns NaN (as scipy) when c < 2, when x or y is constant, or when any value is NaN.
double kendall_tau_b(std::span<const double> x, std::span<const double> y);

/// Ordered pair accuracy (TpuGraphs paper): among pairs with t_i > t_j, the fraction with
/// s_i > s_j (a tie in scores counts as wrong). NaN when no pair has distinct targets.
/// scores, targets: [c]. O(c log c). Throws segrank::Error on length mismatch or NaN.
double ordered_pair_accuracy(std::span<const double> scores, std::span<const double> targets);

/// slowdown@K = (min target among the K lowest scores - min target) / min target, K clamped to c.
/// Ties in scores at the K-th place are broken by index (lower config index first), so the result
/// is deterministic. Requires c >= 1, k >= 1 and every target > 0 (else segrank::Error: runtimes of
/// 0 mean a test split, which cannot be evaluated).
double slowdown_at_k(std::span<const double> scores, std::span<const double> targets, int64_t k);

/// `values` at `indices` (in the order given, a repeated index giving its value again). Throws
/// segrank::Error naming `where` when an index is out of [0, values.size()).
std::vector<double> select_indices(std::span<const double> values, std::span<const int64_t> indices,
                                   const std::string& where);

/// Rank positions of the predicted order (docs/metrics.md#tie-policy):
/// positions[k] = place of config k when the configs are sorted by ascending score with ties
/// broken by the lower config index. The order is computed by `top_configs` (eval/submission.h),
/// the very function `segrank predict` uses to write a submission row, so metrics computed on these
/// positions equal what `segrank leaderboard` computes from the submission. scores: [c], finite
/// (NaN would sort last; evaluate_graph rejects it before). Returns [c] values 0..c-1 (exact in
/// double for any c).
std::vector<double> predicted_positions(std::span<const float> scores);

/// Metrics of one graph (docs/metrics.md). kendall_tau / opa may be NaN (see CollectionMetrics).
struct GraphMetrics {
    std::string name;               ///< graph name (file stem)
    int64_t num_configs = 0;        ///< configs evaluated (after eval.indices restriction)
    bool targets_constant = false;  ///< all targets equal: no ranking information in this graph
    double kendall_tau = 0.0;  ///< tau-b(predicted positions, targets); NaN if targets are constant
    double opa = 0.0;  ///< ordered pair accuracy of the positions; NaN if targets are constant
    double kendall_raw = 0.0;  ///< tau-b(raw scores, targets): counts score ties (diagnostic only)
    double slowdown_1 = 0.0;   ///< slowdown@1 (fraction, 0 = the best config ranked first)
    double slowdown_5 = 0.0;   ///< slowdown@5
    double slowdown_10 = 0.0;  ///< slowdown@10
    /// Runtime regression (docs/metrics.md#runtime-regression): mean and median absolute
    /// percentage error of the predicted runtimes, as fractions (0.1 = 10 %); NaN when not computed
    /// (layout graphs, models without an mse term).
    double mape = std::numeric_limits<double>::quiet_NaN();
    double median_ape = std::numeric_limits<double>::quiet_NaN();
};

/// Thrown by evaluate_graph when a score is NaN or infinite: the model produced it, so a caller
/// that knows where the model came from (segrank evaluate: its checkpoint) names that too.
class NonFiniteScore : public Error {
public:
    using Error::Error;
};

/// Evaluates one graph. scores: [c] model scores (higher = slower); targets: [c] ground truth
/// (tile: runtime / normalizer; layout: runtime ns), all > 0. Throws segrank::Error naming `name`
/// on length mismatch, c == 0, non-finite targets or non-positive targets, NonFiniteScore on a
/// non-finite score.
/// Tie policy: every metric is computed on the predicted order, i.e. on predicted_positions(scores)
/// (ties in scores broken by config index exactly as a submission row is written), never on the raw
/// scores. So `segrank evaluate`, the in-training evaluations and `segrank leaderboard` on the
/// `segrank predict` output agree by construction, also when a model gives tied scores (duplicate
/// config rows get identical scores). `kendall_raw` keeps tau-b of the raw scores for diagnosis.
GraphMetrics evaluate_graph(const std::string& name, std::span<const float> scores,
                            std::span<const double> targets);

/// Averages over the graphs of one collection (e.g. "layout:xla:random").
/// NaN policy: graphs with constant targets carry no ranking information and are left out of the
/// tau and OPA means (counted in `num_uninformative`). Predicted positions are never constant, so
/// kendall_tau / opa are finite for every informative graph; for `kendall_raw`, a graph whose
/// targets vary but whose raw scores are constant gets 0 in the mean (scipy's NaN would poison it).
/// If every graph is uninformative the means are NaN. Slowdowns average over all graphs.
struct CollectionMetrics {
    std::string collection;     ///< collection name
    Task task = Task::kLayout;  ///< decides `score`
    int64_t num_graphs = 0;
    int64_t num_uninformative = 0;  ///< graphs with constant targets
    double kendall_tau = 0.0;       ///< mean tau-b of the predicted order (NaN policy above)
    double kendall_raw = 0.0;       ///< mean tau-b of the raw scores (same policy; diagnostic)
    double opa = 0.0;               ///< mean OPA
    double slowdown_1 = 0.0;        ///< mean slowdown@1
    double slowdown_5 = 0.0;        ///< mean slowdown@5
    double slowdown_10 = 0.0;       ///< mean slowdown@10
    double score = 0.0;             ///< Kaggle: tile 1 - slowdown_5; layout kendall_tau
    /// Means over the graphs with a runtime regression (GraphMetrics::mape / median_ape); NaN when
    /// no graph has one.
    double mape = std::numeric_limits<double>::quiet_NaN();
    double median_ape = std::numeric_limits<double>::quiet_NaN();
};

/// Absolute percentage errors of predicted runtimes (docs/metrics.md#runtime-regression).
struct RuntimeErrors {
    double mape = 0.0;        ///< mean over configs of |predicted - target| / target
    double median_ape = 0.0;  ///< median of the same (mean of the two middle values for even c)
};

/// MAPE and median APE of `predicted` against `targets` ([c] each, same units, e.g. ns or runtime
/// / normalizer). Throws segrank::Error naming `name` on length mismatch, c == 0, a non-finite
/// prediction or a target that is not finite and > 0.
RuntimeErrors runtime_errors(const std::string& name, std::span<const double> predicted,
                             std::span<const double> targets);

/// Runtimes predicted by scores in the mse term's units (docs/losses.md#mse-on-the-log-target):
/// the mse target of a graph is its log runtimes standardized over the graph's configs, so a score
/// s_i de-standardizes to exp(mu + sigma * s_i), with mu and sigma the mean and population std of
/// log(targets) over these configs: the graph's level and spread come from its measurements, the
/// model predicts where each config lies within them. Constant targets (sigma = 0) give every
/// config exp(mu). scores, targets: [c] -> [c] in the targets' units. Throws segrank::Error naming
/// `name` on length mismatch, c == 0, non-finite scores or targets that are not finite and > 0.
std::vector<double> destandardized_runtimes(const std::string& name, std::span<const float> scores,
                                            std::span<const double> targets);

/// Aggregates graph metrics of one collection. Throws segrank::Error if `graphs` is empty.
CollectionMetrics aggregate_collection(const std::string& collection, Task task,
                                       std::span<const GraphMetrics> graphs);

/// Kaggle overall score: mean of the collections' `score` (docs/metrics.md). Throws on empty input.
double overall_score(std::span<const CollectionMetrics> collections);

/// One JSON object for metrics JSONL and `evaluate --json` (keys in field order; NaN is written
/// as null by dump_json).
Json to_json(const GraphMetrics& m);
Json to_json(const CollectionMetrics& m);

/// eval.indices: graph name -> config indices to evaluate (TpuGraphs paper protocol).
using EvalIndices = std::map<std::string, std::vector<int64_t>>;

/// Parses the strict JSON form {"name": [int, ...], ...} (whitespace anywhere, string escapes
/// \" \\ \/ \b \f \n \r \t \uXXXX; integers >= 0). Throws segrank::Error naming `where`, the
/// line:column and what was expected; duplicate names are errors. An index repeated within one
/// list is kept (the TpuGraphs paper's files repeat indices; a repeat is a tie).
EvalIndices parse_eval_indices(std::string_view text, const std::string& where);
/// Reads and parses an eval.indices file. Throws segrank::Error naming the path.
EvalIndices load_eval_indices(const std::filesystem::path& path);

/// Evaluates one graph on the configs `indices` lists for it (scores and targets: [c], all configs
/// of the graph). Throws segrank::Error when `name` has no entry in `indices`, when the list is
/// empty, or when an index is out of range (a repeated index is scored again).
GraphMetrics evaluate_graph(const std::string& name, std::span<const float> scores,
                            std::span<const double> targets, const EvalIndices& indices);

}  // namespace segrank
