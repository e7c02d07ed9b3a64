// Evaluation across ranks (docs/architecture.md#distribution, docs/metrics.md): each rank scores
// the evaluation graphs it owns, rank 0 gathers the per-graph metrics and aggregates them per
// collection; the selection metric, the random-ranking baseline and the eval.indices checks.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "data/normalizer.h"
#include "eval/metrics.h"
#include "gnn/model.h"
#include "gst/prepared_graph.h"
#include "sampling/ownership.h"
#include "trainer/comm.h"
#include "trainer/config.h"
#include "trainer/dataset.h"

namespace segrank {

/// Result of one evaluation pass (identical on every rank).
struct EvalResult {
    std::vector<GraphMetrics> graphs;            ///< rank 0 only (empty elsewhere)
    std::vector<CollectionMetrics> collections;  ///< per collection, in name order
    double overall = 0.0;                        ///< mean of the collections' Kaggle scores
    double selection = 0.0;  ///< eval.metric value (higher is better, sign-adjusted)
    /// {"overall", "collections": [to_json(CollectionMetrics)...]} (rank 0 holds the collections).
    Json to_json() const;
};

/// Scores `entries` (this rank's share: the graphs eval_ownership gives this rank) with `model` and
/// reduces the metrics over ranks. configs of an entry = its held-out configs, else eval.indices,
/// else all. Throws segrank::Error on unlabelled graphs, and graph_oom_message
/// (data/graph_memory.h) naming the graph when it does not fit in memory, advising `oom_advice`
/// (default: graph_memory_settings(cfg, true), the config keys; `segrank evaluate` names its
/// options).
EvalResult evaluate_graphs(Model& model, const Normalizer& normalizer, const RunConfig& cfg,
                           const std::vector<GraphEntry>& entries, Communicator& comm,
                           std::map<int64_t, std::unique_ptr<PreparedGraph>>* cache = nullptr,
                           int64_t random_seed = -1, const std::string& oom_advice = {});

/// What one graph's memory grows with under `cfg`, for graph_oom_message (data/graph_memory.h):
/// "its memory grows with model.hidden = H, sampling.configs = K (training) or eval.memory_mb = M
/// and eval.chunk_configs = C (evaluating), segments.max_nodes = S ...; lower them or give the
/// process more memory".
std::string graph_memory_settings(const RunConfig& cfg, bool evaluating);

/// Owners of evaluation graphs (entry i has id i) under cfg.dist.ownership: graph id % world for
/// modulo; for balanced and per_step (an evaluation is one pass) balanced by nodes x configs scored
/// (held-out configs, else the eval.indices list of the graph, else all configs; `indices` = the
/// loaded eval.indices, empty when unset). Identical on every rank.
Ownership eval_ownership(const RunConfig& cfg, const std::vector<GraphEntry>& entries,
                         const EvalIndices& indices, int world);

/// Loads cfg.eval.indices (when set) and checks it against the evaluation graphs: every entry
/// without held-out configs needs an index list, every index < the graph's config count, and some
/// graph needs at least 2 configs to rank (else every metric is undefined). Called by the Trainer
/// constructor so a bad file fails before step 1, not at the first evaluation. Throws
/// segrank::Error naming the file (file:line:col for JSON errors), the graph and the index.
void check_eval_indices(const RunConfig& cfg, const std::vector<GraphEntry>& entries);

/// `segrank train --check`'s part of check_eval_indices, which needs no graph: reads
/// cfg.eval.indices as the run does (a regular file within kMaxJsonFileBytes, the shape {"graph
/// name": [config indices], ...}). With `data_later` (--data-later) a file that does not exist yet
/// is left to the run (a script writes it with the data) and false is returned; true otherwise
/// (also when eval.indices is not set). Throws segrank::Error naming the file, as the run would.
bool check_eval_indices_file(const RunConfig& cfg, bool data_later);

/// True when cfg.eval.indices is set and selects the configs of some entry (one without held-out
/// configs, which take precedence).
bool eval_indices_apply(const RunConfig& cfg, const std::vector<GraphEntry>& entries);
/// "<eval.indices path> xxh3_64 <hex>\n" over the file's bytes ("(none)\n" without the key), for
/// the rank agreement check. Throws segrank::Error naming the file when it cannot be read.
std::string eval_indices_digest(const RunConfig& cfg);
/// "xxh3_64 <hex>" over the eval.indices file's bytes, "(none)" without the key: the evaluation
/// set a checkpoint's selections were measured on, wherever the file is. Throws as
/// eval_indices_digest.
std::string eval_indices_content_digest(const RunConfig& cfg);

/// The random-ranking baseline on the same graphs and configs: metrics of uniform random scores
/// (seeds 0..seeds-1, Rng stream "random_baseline"), averaged over seeds per collection.
EvalResult random_baseline(Model& model, const Normalizer& normalizer, const RunConfig& cfg,
                           const std::vector<GraphEntry>& entries, Communicator& comm,
                           std::map<int64_t, std::unique_ptr<PreparedGraph>>* cache, int seeds);

/// Prints the evaluation table of `r` (one row per collection: graphs, then the metric fields
/// that have a column in visit_metric_fields, 4 decimals) and "overall", under `title`, to stdout.
void print_eval_table(const EvalResult& r, const char* title);

}  // namespace segrank
