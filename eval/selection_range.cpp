// Ranges of selection values (eval/selection_range.h), from trainer/evaluation.cpp's
// selection_field: kaggle is the collection score (tile 1 - slowdown@5, layout Kendall tau).
#include "eval/selection_range.h"

#include <limits>

#include "gnn/core/check.h"

namespace segrank {
namespace {
constexpr double kNone = -std::numeric_limits<double>::infinity();
}  // namespace

SelectionRange selection_range(std::string_view metric, std::optional<Task> task) {
    if (metric == "kaggle") {
        if (task == Task::kLayout) return {-1.0, 1.0, "[-1, 1] (the Kendall tau of a layout run)"};
        if (task == Task::kTile) return {kNone, 1.0, "<= 1 (1 - slowdown@5 of a tile run)"};
        return {kNone, 1.0, "<= 1 (a kaggle score of a run whose task is unknown)"};
    }
    if (metric == "kendall") return {-1.0, 1.0, "[-1, 1] (a Kendall tau)"};
    if (metric == "opa") return {0.0, 1.0, "[0, 1] (a fraction of ordered pairs)"};
    if (metric == "slowdown_1" || metric == "slowdown_5" || metric == "slowdown_10")
        return {kNone, 0.0, "<= 0 (a slowdown >= 0, negated: higher is better)"};
    SEGRANK_CHECK(metric.empty(), "eval.metric = \"", metric,
                  "\": expected kaggle, kendall, opa, slowdown_1, slowdown_5 or slowdown_10");
    return {kNone, 1.0, "<= 1 (the bound of every eval.metric; the run's config is unknown)"};
}

SelectionField selection_field(std::string_view metric) {
    if (metric == "kaggle") return {"score", 1.0};
    if (metric == "kendall") return {"kendall_tau", 1.0};
    if (metric == "opa") return {"opa", 1.0};
    if (metric == "slowdown_1") return {"slowdown_1", -1.0};
    if (metric == "slowdown_5") return {"slowdown_5", -1.0};
    if (metric == "slowdown_10") return {"slowdown_10", -1.0};
    SEGRANK_CHECK(false, "eval.metric = \"", metric,
                  "\": expected kaggle, kendall, opa, slowdown_1, slowdown_5 or slowdown_10");
    return {};
}

SelectionRange overall_score_range(std::optional<Task> task) {
    if (task == Task::kLayout)
        return {-1.0, 1.0, "in [-1, 1] (a mean of Kendall taus: a layout run)"};
    return {kNone, 1.0, "at most 1"};
}

}  // namespace segrank
