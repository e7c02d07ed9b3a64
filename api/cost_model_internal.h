// What the CLI (predict, tune) needs of the CostModel beyond the public header
// include/segrank/cost_model.h: the Impl structs, a Graph over a Dataset entry, and the loaded
// members. Not installed.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "data/graph.h"
#include "data/graph_entry.h"
#include "data/graph_source.h"
#include "gst/inference_budget.h"
#include "gst/prepared_graph.h"
#include "segrank/cost_model.h"
#include "trainer/trainer.h"

namespace segrank {

/// The process-wide lock every public CostModel / Graph method takes (HDF5 is not thread-safe).
std::recursive_mutex& cost_model_mutex();

struct Graph::Impl {
    std::unique_ptr<GraphSource> owned;  ///< the source when the Graph opened it; else null
    GraphEntry entry;                    ///< source, index, collection, name, sizes
    std::string where;                   ///< what it was read from
    std::string label;                   ///< names the graph in score errors
    /// Prepared graphs per member model (keyed by the Model), kept across score calls.
    std::map<const void*, std::unique_ptr<PreparedGraph>> prepared;
    bool keep_prepared = true;
};

/// One member of the ensemble.
struct CostMember {
    LoadedModel lm;
    std::string name;  ///< the checkpoint path as given
};

struct CostModel::Impl {
    std::vector<CostMember> members;
    ScoreOptions options;
};

/// g prepared for member `lm`: from g's cache, else prepared now (kept in g when it keeps them,
/// else in `local`, which then owns it). Throws segrank::Error from prepare_graph.
PreparedGraph* prepared_for(LoadedModel& lm, Graph::Impl& g, std::unique_ptr<PreparedGraph>& local);

/// The inference budget a member trained with `cfg` scores with under `o`: o.memory_mb when > 0
/// (then o.cache_mb, or a quarter of it), else the checkpoint's eval.memory_mb with o.cache_mb when
/// >= 0, else its eval.cache_mb (docs/gst.md#memory-budget). Errors name `memory_key` /
/// `cache_key` for the values given in `o` and `checkpoint`'s eval.* keys for its own.
InferenceBudget score_budget(const ScoreOptions& o, const RunConfig& cfg,
                             const std::string& checkpoint,
                             const std::string& memory_key = "ScoreOptions.memory_mb",
                             const std::string& cache_key = "ScoreOptions.cache_mb");

/// Throws segrank::Error naming g when no member of `cm` was trained on g's task.
void require_member(const CostModel::Impl& cm, const Graph::Impl& g);

/// A Graph owning an in-memory record (validated as an npz is); `where` names it in messages.
Graph graph_from_record(TileGraph g, const std::string& where);
Graph graph_from_record(LayoutGraph g, const std::string& where);

/// A Graph over graph `entry` of a source the caller keeps alive (a Dataset's); `label` names it in
/// score errors (predict: the submission ID). Prepared graphs are not kept across calls.
Graph graph_from_entry(const GraphEntry& entry, std::string label);

}  // namespace segrank
