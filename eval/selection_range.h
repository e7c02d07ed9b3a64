// The values a run's selection metric (eval.metric) can take: one rule for every reader of a
// selection value (`train --resume` reading /extra/best_selection, `segrank report` reading
// metrics.jsonl and report.json), from its writer trainer/evaluation.cpp (docs/metrics.md).
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "gnn/core/task.h"

namespace segrank {

/// A closed range [lo, hi] of selection values (lo may be -inf) and how a message names it.
struct SelectionRange {
    double lo = 0.0, hi = 1.0;
    std::string text;  ///< e.g. "[-1, 1] (the Kendall tau of a layout run)"
};

/// The range of a selection value of eval.metric `metric` ("kaggle", "kendall", "opa",
/// "slowdown_1", "slowdown_5", "slowdown_10"; higher is better, slowdowns negated) in a run of
/// `task`: kendall [-1, 1], opa [0, 1], slowdown_k (-inf, 0], kaggle [-1, 1] for a layout run (a
/// Kendall tau) and (-inf, 1] for a tile run (1 - slowdown@5). An unknown task (nullopt) or
/// metric ("", the run's config is unknown) gives the union of the ranges it could be: kaggle
/// (-inf, 1], "" (-inf, 1]. Throws segrank::Error for any other metric name.
SelectionRange selection_range(std::string_view metric, std::optional<Task> task);

/// The CollectionMetrics field eval.metric `metric` selects on (its JSON key, eval/metric_fields.h)
/// and its sign (+1, or -1 for the slowdowns: higher is better for every selection value); a run's
/// selection value is the mean of sign x field over the collections where it is finite
/// (trainer/evaluation.cpp). Throws segrank::Error for a metric name that is not one of
/// selection_range's.
struct SelectionField {
    std::string_view key;
    double sign = 1.0;
};
SelectionField selection_field(std::string_view metric);

/// The range of an eval result's "overall" (the mean of its collections' scores) in a run of
/// `task`: [-1, 1] for layout (Kendall taus), (-inf, 1] for tile or an unknown task; `text` reads
/// after "a number" ("in [-1, 1] (...)", "at most 1").
SelectionRange overall_score_range(std::optional<Task> task);

}  // namespace segrank
