// Ranking and regression losses (docs/losses.md) for the K sampled configs of ONE graph: the value
// and its gradient w.r.t. the scores in one call (gradients accumulate: dscores +=).
// Convention: higher score = slower; a pair (i, j) with t_i > t_j means i is slower.
#pragma once
#include <cstdint>
#include <span>
#include <string_view>
#include <vector>

#include "gnn/core/enum_names.h"

namespace segrank {

/// Loss kinds; names as in the config: "pairwise_hinge", "pairwise_logistic", "listmle", "mse".
enum class LossKind { kPairwiseHinge, kPairwiseLogistic, kListMle, kMse };

/// Names: "pairwise_hinge", "pairwise_logistic", "listmle", "mse".
std::span<const EnumName<LossKind>> enum_names(LossKind);
/// Parses a loss name; throws segrank::Error listing the valid names.
LossKind parse_loss_kind(std::string_view name);
/// The config name of a kind.
std::string_view to_string(LossKind kind);

/// One weighted term of the total loss: `loss = sum_terms weight * term` (config `loss.terms`).
struct LossTerm {
    LossKind kind = LossKind::kPairwiseHinge;
    double weight = 1.0;
    bool operator==(const LossTerm&) const = default;
};

/// Hyper-parameters shared by the terms.
struct LossOptions {
    double margin = 0.1;       ///< pairwise_hinge margin (>= 0)
    double temperature = 1.0;  ///< listmle temperature T (> 0)
};

// Every single-term function below: s = scores [K], t = targets [K] (runtime ns or runtime /
// normalizer; only their order matters except for mse), ds = [K] gradient accumulator (ds +=
// dL/ds) or an empty span for value only. K = 0 or 1 and all-equal targets give 0 and add nothing.
// Throws segrank::Error on length mismatch or non-finite targets. Non-finite scores propagate into
// the value (the trainer's finiteness check reports them with step/graph/config ids).

/// Mean over pairs {t_i > t_j} of max(0, margin - (s_i - s_j)); tied targets are skipped.
/// O(K^2) time, O(1) extra memory: fine for training's K <= 128 (16k pairs); not meant for
/// evaluation over 10^5 configs. At the kink (margin == s_i - s_j) the subgradient 0 is used.
double pairwise_hinge_loss(std::span<const double> s, std::span<const double> t, double margin,
                           std::span<double> ds);

/// Mean over pairs {t_i > t_j} of log(1 + exp(-(s_i - s_j))), computed as a stable softplus.
/// O(K^2) like pairwise_hinge_loss.
double pairwise_logistic_loss(std::span<const double> s, std::span<const double> t,
                              std::span<double> ds);

/// ListMLE (Plackett-Luce likelihood of the fastest-first order), temperature T > 0:
///   L = (1/K) * sum_i [ log( exp(-s_i/T) + sum_{j : t_j > t_i} exp(-s_j/T) ) + s_i/T ].
/// Without ties this is the textbook sum_i (logsumexp_{j>=i}(-s_j/T) + s_i/T) over the
/// fastest-first order, divided by K. Choices: (1) ties: config i competes only with itself and
/// the configs strictly slower than it, so tied configs are never ordered against each other
/// (symmetric, no arbitrary tie-break; all-ties gives 0 like the pairwise losses); (2) the sum is
/// averaged over K so that term weights do not depend on K (the pairwise terms and mse are means
/// too). O(K log K), stable (running log-sum-exp).
double listmle_loss(std::span<const double> s, std::span<const double> t, double temperature,
                    std::span<double> ds);

/// Regression on the standardized log target (per graph, over these K configs):
///   z_i = (log t_i - mean(log t)) / std(log t) (population std),  L = mean_i (s_i - z_i)^2.
/// The graph's score level is arbitrary (sum of segment scores), so the target is standardized per
/// graph. Requires t_i > 0 (else segrank::Error). K <= 1 or constant targets: z undefined -> 0.
double mse_log_loss(std::span<const double> s, std::span<const double> t, std::span<double> ds);

/// Weighted sum of `terms` for one graph, for the trainer. scores: [K] float; targets: [K];
/// dscores: [K] (dscores += scale * dL/ds) or empty. Returns scale * L (scale: e.g. 1 / global
/// batch size). `term_values`, if non-empty, must have terms.size() entries and receives each
/// unweighted, unscaled term value. Throws segrank::Error on bad sizes, empty `terms`, weights
/// that are not finite, margin < 0 or temperature <= 0.
double compute_loss(std::span<const LossTerm> terms, const LossOptions& options,
                    std::span<const float> scores, std::span<const double> targets,
                    std::span<float> dscores, double scale = 1.0,
                    std::span<double> term_values = {});

/// Same with integer runtimes in ns (layout targets).
double compute_loss(std::span<const LossTerm> terms, const LossOptions& options,
                    std::span<const float> scores, std::span<const int64_t> targets_ns,
                    std::span<float> dscores, double scale = 1.0,
                    std::span<double> term_values = {});

}  // namespace segrank
