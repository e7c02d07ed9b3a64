// The one list of the metric fields of GraphMetrics and CollectionMetrics (docs/metrics.md): their
// JSON keys, evaluation-table columns and members. Adding a metric is one line in
// visit_metric_fields; the JSON writers, the gather of per-graph metrics over ranks, the
// random-baseline mean, the selection metric and the evaluation table all walk this list.
#pragma once
#include <type_traits>

#include "eval/metrics.h"

namespace segrank {

/// How one metric field is named and shown.
struct MetricField {
    const char* key;  ///< JSON key (metrics JSONL, report.json, evaluate --json)
    /// Header of its column in the evaluation table (`segrank train`); nullptr = not a column.
    const char* column = nullptr;
    int width = 0;  ///< printf width of the column (values with 4 decimals; counts as integers)
    /// Present only with a runtime regression (written when `mape` is not NaN;
    /// docs/metrics.md#runtime-regression).
    bool regression_only = false;
};

/// Calls fn(MetricField, m.member...) for every metric field of the metrics `m...` (all
/// GraphMetrics or all CollectionMetrics, const or not; fn gets the same member of each, so two
/// results can be combined field by field) in JSON key order; members are int64_t (counts), bool
/// or double. The identity fields (graph / collection name, task) are not metrics, not visited.
template <typename Fn, typename M, typename... More>
void visit_metric_fields(Fn&& fn, M& m, More&... more) {
    constexpr bool kGraph = std::is_same_v<std::remove_const_t<M>, GraphMetrics>;
    static_assert(kGraph || std::is_same_v<std::remove_const_t<M>, CollectionMetrics>);
    static_assert((std::is_same_v<std::remove_const_t<M>, std::remove_const_t<More>> && ...));
    if constexpr (kGraph) {
        fn(MetricField{"num_configs"}, m.num_configs, more.num_configs...);
        fn(MetricField{"targets_constant"}, m.targets_constant, more.targets_constant...);
    } else {
        fn(MetricField{"num_graphs", "graphs", 7}, m.num_graphs, more.num_graphs...);
        fn(MetricField{"num_uninformative"}, m.num_uninformative, more.num_uninformative...);
    }
    fn(MetricField{"kendall_tau", "kendall", 9}, m.kendall_tau, more.kendall_tau...);
    fn(MetricField{"kendall_raw"}, m.kendall_raw, more.kendall_raw...);
    fn(MetricField{"opa", "opa", 8}, m.opa, more.opa...);
    fn(MetricField{"slowdown_1", "slowdown1", 9}, m.slowdown_1, more.slowdown_1...);
    fn(MetricField{"slowdown_5", "slowdown5", 9}, m.slowdown_5, more.slowdown_5...);
    fn(MetricField{"slowdown_10", "slowdn10", 9}, m.slowdown_10, more.slowdown_10...);
    if constexpr (!kGraph) fn(MetricField{"score", "score", 8}, m.score, more.score...);
    fn(MetricField{"mape", nullptr, 0, true}, m.mape, more.mape...);
    fn(MetricField{"median_ape", nullptr, 0, true}, m.median_ape, more.median_ape...);
}

}  // namespace segrank
