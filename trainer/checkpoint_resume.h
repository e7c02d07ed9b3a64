// What `segrank train --resume` reads from /extra of a training checkpoint beside the parameters
// (docs/files.md#checkpoints): the selection state, the world size and the HistoryTable shards,
// each checked against what the writer (trainer/run_checkpoint.cpp) can produce and against the
// run being resumed, so an edited (re-signed) file fails naming the file, the dataset or attribute
// and what was expected, before any value is used.
#pragma once
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include "segments/history_table.h"
#include "trainer/checkpoint.h"
#include "trainer/config.h"
#include "trainer/selection.h"

namespace segrank {

/// The run a checkpoint is resumed into: what its history entries must fit.
struct ResumeTarget {
    int64_t step = 0;   ///< the checkpoint's /step: every history value was written before it
    std::string task;   ///< the run's task ("layout" or "tile", from its data)
    int32_t width = 1;  ///< floats per history value of the run's HistoryTable
    /// eval.metric the checkpoint's run selected on (its stored config): bounds best_selection.
    cfg::EvalMetric metric = cfg::EvalMetric::kKaggle;
    /// Per training graph id g (0 <= g < size): its node count (an upper bound of its segment
    /// count) and its config count (config indices are in [0, num_configs)).
    std::vector<int64_t> num_nodes, num_configs;
};

/// The selection state and shard count of /extra: best_step (-1, or in [0, step]),
/// best_selection (a finite number, as "%.17g" wrote it, in the range of target.metric: see
/// eval/selection_range.h; -1e300 = no evaluation yet), evals_without_improvement (>= 0),
/// world_size (>= 1), history_ranks (= world_size: the writer stores one shard per rank; both
/// required) and task (absent, or target.task). Throws segrank::Error "<file>: attribute
/// /extra/<name> = <value>: expected ..." otherwise.
struct ResumeState {
    SelectionState selection;
    int64_t history_ranks = 0;  ///< number of /extra/history/rank_<r> groups
};
ResumeState read_resume_state(const CheckpointReader& r, const std::filesystem::path& file,
                              const ResumeTarget& target);

/// Parses an attribute holding a finite decimal number (all of `text`, as "%.17g" writes it).
/// Throws segrank::Error "<file>: attribute <attribute> = "<text>": expected a finite number"
/// otherwise (an empty text, "abc", "nan", "inf", "1x").
double parse_finite_attribute(const std::string& text, const std::filesystem::path& file,
                              const std::string& attribute);

/// Reads /extra/history/rank_<shard>/{graphs i64 [G], graph_segments i32 [G], keys i64 [E, 3],
/// steps i64 [E], values f32 [E, width]} and checks, before anything is used: the shapes agree
/// with each other and with target.width; graphs are distinct training graph ids (in [0,
/// num_nodes.size())); graph_segments[i] is in [1, num_nodes of graphs[i]]; every key names a
/// graph of `graphs`, a config in [0, its num_configs) and a segment in [0, its graph_segments);
/// steps are in [0, target.step); values are finite. Throws segrank::Error "<file>: dataset
/// /extra/history/rank_<shard>/<name> [index]: ... expected ..." on the first violation.
HistoryArrays read_history_shard(const CheckpointReader& r, const std::filesystem::path& file,
                                 int64_t shard, const ResumeTarget& target);

}  // namespace segrank
