// One graph's GST step split by segment and config range (dist.ownership = "per_segment",
// docs/distributed.md#segment-units): every rank derives the same plan of a graph's step, computes
// the values of the (segment, configs) pieces it is given (kept stale ones from the HistoryTable or
// recomputed, fresh ones with saved state), and after the members' values are summed over ranks
// runs the backward of its fresh pieces. gst/train_step.cpp runs the same step in one piece.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "gnn/model.h"
#include "gst/gst.h"
#include "gst/prepared_graph.h"
#include "sampling/segment_sampler.h"
#include "segments/history_table.h"

namespace segrank {

/// What every rank derives alike for one graph's step: the segments taking part and the choice of
/// fresh and kept stale ones (positions in `active`), as gst_train_graph draws them.
struct SegmentStepPlan {
    std::vector<int32_t> active;  ///< segment ids taking part (empty: nothing depends on configs)
    SegmentChoice choice;         ///< over positions in `active`; unset when `active` is empty
    CombineWeights weights;       ///< combine_weights(choice, opt.aggregate)
    int64_t width = 1;            ///< floats per segment value (the HistoryTable width)
};

/// The plan of graph g's step `step` (seed, fresh, keep_prob and aggregate from `opt`).
SegmentStepPlan plan_segment_step(const Model& model, const PreparedGraph& g, int64_t step,
                                  const GstOptions& opt);

/// Values [configs.size(), width] of the kept stale segment at position `pos` of plan.active for
/// `configs` (file indices, all in `batch`, the rows load_config_batch read): stored values, and
/// those absent (history_init = "fresh") or too old recomputed forward-only with the current
/// parameters and stored in `table` at `step`, as gst_train_graph's stale sum does for that
/// segment. Throws segrank::Error as gst_train_graph.
Tensor stale_segment_values(Model& model, const PreparedGraph& g, const SegmentStepPlan& plan,
                            int32_t pos, const ConfigBatch& batch, std::span<const int64_t> configs,
                            int64_t step, HistoryTable& table, const GstOptions& opt);

/// The fresh segment at position `pos` of plan.active for `configs` [len] (file indices, all in
/// `batch`): its forward with saved state (value() [len, width]), then once backward(dvalue [len,
/// width]) accumulating parameter gradients and write() storing the values in the table, as
/// gst_train_graph does for that segment's rows. `model`, `g`, `batch` and `opt` must outlive the
/// object. Throws segrank::Error as gst_train_graph.
class FreshSegmentSlice {
public:
    FreshSegmentSlice(Model& model, const PreparedGraph& g, const SegmentStepPlan& plan,
                      int32_t pos, const ConfigBatch& batch, std::span<const int64_t> configs,
                      int64_t step, const GstOptions& opt);
    ~FreshSegmentSlice();
    FreshSegmentSlice(const FreshSegmentSlice&) = delete;
    FreshSegmentSlice& operator=(const FreshSegmentSlice&) = delete;
    const Tensor& value() const;
    void backward(ConstMatrixView dvalue);
    /// Stores value() for (graph, configs, pos) at the step (the plan's S as the graph's count).
    void write(HistoryTable& table) const;

private:
    struct State;
    std::unique_ptr<State> s_;
};

}  // namespace segrank
