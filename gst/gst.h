// Graph Segment Training step and streaming inference over PreparedGraphs
// (docs/gst.md#training-step, docs/gst.md#inference): fresh segments forward with saved state,
// stale ones from the HistoryTable with Stale Embedding Dropout, the ranking loss on the combined
// graph scores, backward through fresh segments only, and inference that streams segments one at a
// time with no saved state. The step is in gst/train_step.cpp, inference in gst/inference.cpp, what
// both share (model.aggregate, forward-only segment readouts) in gst/aggregation.h.
#pragma once
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "gnn/loss.h"
#include "gnn/model.h"
#include "gst/combine.h"
#include "gst/inference_budget.h"
#include "gst/prepared_graph.h"
#include "segments/history_table.h"

namespace segrank {

/// The [segments], [model] and [loss] values the step needs (plain values,
/// docs/style.md#config-values).
struct GstOptions {
    SegmentAggregate aggregate = SegmentAggregate::kScoreSum;
    int32_t fresh = 1;       ///< k fresh segments per graph and step
    double keep_prob = 0.5;  ///< SED keep probability p
    HistoryInit history_init = HistoryInit::kFresh;
    int64_t max_staleness = 0;
    uint64_t seed = 0;  ///< sampling seed (segment choice, SED) and dropout
    /// Skip config-independent segments (exact under score_sum with ranking-only losses,
    /// docs/gst.md#skipping-config-independent-segments).
    bool skip_independent = true;
    std::vector<LossTerm> loss_terms;
    LossOptions loss_options;
    /// score_graph with model.config_attention: the number of config orders scored and averaged
    /// (`eval.tta_orders`, docs/model.md#test-time-averaging); ignored without the option.
    int32_t tta_orders = 1;
    /// Inference (score_graph, segment_readouts) computes each distinct row of a layer once
    /// (Model::encode_dedupe, `eval.dedupe_rows`, docs/model.md#row-deduplication); false = every
    /// (node, config) row, as training does.
    bool dedupe_rows = true;
    /// Appended to the "non-finite loss" error of a training step: the settings that scale the
    /// loss and its gradients, as the caller names them ("" = nothing).
    std::string nonfinite_hint;
};

/// What one graph's training step produced.
struct GraphStepResult {
    double loss = 0.0;  ///< scaled loss (already divided by the global batch)
    int64_t fresh_segments = 0;
    int64_t stale_hits = 0;
    int64_t stale_recomputed = 0;
    int64_t active_segments = 0;  ///< segments taking part (S_eff)
    std::vector<float> scores;    ///< [K] combined graph scores of the sampled configs
};

/// Whether every loss term is a ranking loss (shift-invariant), so independent segments can be
/// skipped.
bool ranking_only(std::span<const LossTerm> terms);

/// The analytical prior's z of `configs` (file indices) from g.prior_z, to add with
/// Model::add_prior after the segment combination (docs/model.md#analytical-prior); empty when the
/// model has no prior. Throws segrank::Error when the model has the prior and g was prepared
/// without it, or for a config out of range.
std::vector<float> prior_values(const Model& model, const PreparedGraph& g,
                                std::span<const int64_t> configs);

/// One graph's contribution to a training step: samples fresh segments and the SED mask from
/// (seed, step, graph id), reads/writes `table` (the graph's owner shard), accumulates parameter
/// gradients scaled by `scale` (1 / global batch) into model.params().grads(). configs [K] are
/// file indices with targets [K]. Throws segrank::Error when the loss is not finite (naming step,
/// graph and configs).
GraphStepResult gst_train_graph(Model& model, const PreparedGraph& g,
                                std::span<const int64_t> configs, std::span<const double> targets,
                                int64_t step, double scale, HistoryTable& table,
                                const GstOptions& opt);

/// One graph's GST training step in two halves around the loss, so that the K configs of one graph
/// can be trained on several ranks (dist.units = "config_slices", docs/distributed.md): the
/// constructor runs the forward of `configs` [K] (file indices; the stale sums, the fresh segments
/// with saved state, their combination) and scores() gives their scores [K] before the analytical
/// prior; backward(dscores [K]) runs the backward through the fresh segments only, accumulating
/// parameter gradients, and writes their values to `table`. Every value of a config depends only on
/// that config's rows (not with model.config_attention), so the slices of one graph trained apart
/// give the gradients of the whole graph up to summation order. `g`, `configs`, `table`, `opt` and
/// `model` must outlive the object. Throws segrank::Error as gst_train_graph.
class GstGraphStep {
public:
    GstGraphStep(Model& model, const PreparedGraph& g, std::span<const int64_t> configs,
                 int64_t step, HistoryTable& table, const GstOptions& opt);
    ~GstGraphStep();
    GstGraphStep(const GstGraphStep&) = delete;
    GstGraphStep& operator=(const GstGraphStep&) = delete;
    /// False when no segment depends on the configs (every config scores 0 and backward does
    /// nothing).
    bool trains() const;
    /// The combined scores [K] of the forward (the loss adds the prior in place).
    std::span<float> scores();
    /// The backward from dscores [K] (dL/dscores), once.
    void backward(std::span<const float> dscores);
    /// Segment counts of the step (loss and scores are the caller's).
    const GraphStepResult& result() const;

private:
    struct State;
    std::unique_ptr<State> s_;
};

/// The loss of one graph's step on its scores [K] (in place: + the analytical prior `prior`, from
/// prior_values, empty without it): returns scale x L and accumulates dscores [K] += scale x dL/ds
/// (the prior weight's gradient is the caller's: Model::prior_backward of the configs it trains).
/// Throws segrank::Error when the loss is not finite, naming the
/// step, the graph and its configs.
double graph_step_loss(Model& model, const PreparedGraph& g, std::span<const int64_t> configs,
                       std::span<const double> targets, std::span<const float> prior,
                       std::span<float> scores, std::span<float> dscores, int64_t step,
                       double scale, const GstOptions& opt);

/// Largest config-row block score_graph holds (bytes) on the dense path at the default budget
/// (InferenceBudget::dense_rows_bytes): a chunk is cut below `chunk` configs when its rows would
/// exceed this (layout graphs with many configurable nodes: 10^4 nodes x 18 bytes = 176 KiB per
/// config), so inference memory does not grow with nc (docs/gst.md#inference).
inline constexpr int64_t kMaxConfigChunkBytes = int64_t{8} << 20;
/// With row deduplication inference holds up to this many times kMaxConfigChunkBytes of config
/// rows at the default budget (InferenceBudget::dedupe_rows_bytes, 256 MiB, 14,913 configs of a
/// graph with 1000 configurable nodes): the layer state no longer grows with K x H, and the larger
/// the chunk the fewer times each distinct row is recomputed (inference_chunk;
/// docs/model.md#row-deduplication).
inline constexpr int64_t kDedupeChunkBytesFactor = 32;
/// Deduplicated layout inference at the default budget (InferenceBudget::probe_configs): the first
/// chunk of a graph has at most this many configs; it measures the graph's dep rows per config (the
/// largest segment's sum over layers of m_l), and later chunks take as many configs as keep the
/// per-chunk class tables (docs/model.md#row-deduplication) within InferenceBudget::state_bytes.
inline constexpr int64_t kDedupeProbeConfigs = 1024;
/// Bound of the per-chunk deduplication state (bytes) at the default budget
/// (InferenceBudget::state_bytes).
inline constexpr int64_t kDedupeStateBytes = int64_t{512} << 20;
/// Bytes of deduplication state per dep row and config (the int32 class, representative and key
/// tables of a layer and the readout's per-config work; measured, docs/model.md#row-deduplication).
inline constexpr int64_t kDedupeBytesPerDepRow = 176;
/// Configs per forward pass and what one chunk may hold, for score_graph.
struct InferenceChunk {
    int64_t configs = 256;                        ///< configs per forward pass (at most)
    int64_t max_bytes = kMaxConfigChunkBytes;     ///< config rows of one chunk (bytes)
    int64_t state_bytes = kDedupeStateBytes;      ///< deduplicated chunk state (bytes)
    int64_t probe_configs = kDedupeProbeConfigs;  ///< configs of the first deduplicated chunk
    /// Layout config rows held at once (bytes): a chunk's rows are read in column blocks of
    /// consecutive segments' configurable nodes within this bound (InferenceBudget::
    /// config_block_bytes); a segment whose own columns take more is read alone.
    int64_t block_bytes = int64_t{8} << 20;
};

/// What score_graph held and read, for tests and benchmarks.
struct InferenceStats {
    int64_t chunks = 0;         ///< forward passes over the segments (chunks x orders)
    int64_t column_blocks = 0;  ///< layout column blocks read (over all chunks)
    /// Largest config-row buffer held (bytes, capacity of the batch's rows): one column block of
    /// layout rows, or one chunk of tile rows.
    int64_t max_config_row_bytes = 0;
};
/// What inference uses for `model` under `budget` (docs/gst.md#memory-budget): (chunk_configs,
/// budget.dense_rows_bytes), or when score_graph deduplicates rows (opt.dedupe_rows on a layout
/// model without config_attention; docs/model.md#row-deduplication) (dedupe_chunk_configs,
/// budget.dedupe_rows_bytes): the deduplicated state costs O(m_l x K) ints per layer, and the
/// larger the chunk the more configs share each row. The state bound and the probe size are the
/// budget's.
InferenceChunk inference_chunk(const Model& model, const GstOptions& opt, int64_t chunk_configs,
                               int64_t dedupe_chunk_configs,
                               const InferenceBudget& budget = InferenceBudget{});

/// Configs per chunk after a graph's first (probe) chunk in deduplicated layout inference, for a
/// chunk bound `chunk` and the probe's measured dep rows per config (sum over layers of m_l),
/// counting the class tables only: kDedupeStateBytes / (kDedupeBytesPerDepRow x
/// dep_rows_per_config), clamped to [min(chunk, kDedupeProbeConfigs), chunk]; `chunk` when nothing
/// was measured (<= 0).
int64_t dedupe_chunk_after_probe(int64_t chunk, int64_t dep_rows_per_config);

/// Bytes per hidden unit of one distinct row and config of a deduplicated chunk (the previous
/// layer's rows, the self row, both neighbour means and the output while a layer is computed, and
/// the readout's work; measured on the random configs of `bench --memory`, where every dep row is
/// distinct: 24 x H x 214 distinct + 176 x 378 dep rows = 724 KB per config against about 655
/// measured).
inline constexpr int64_t kDedupeBytesPerUniqueUnit = 24;

/// The same under a state bound `state_bytes` and a probe of `probe_configs` (an InferenceChunk's),
/// also counting the probe's distinct rows per config of its largest layer
/// (`unique_rows_per_config`, rows of `hidden` floats): state_bytes / (kDedupeBytesPerDepRow x
/// dep rows + kDedupeBytesPerUniqueUnit x hidden x distinct rows), clamped to [min(chunk,
/// probe_configs), chunk]; `chunk` when nothing was measured (dep_rows_per_config <= 0).
int64_t dedupe_chunk_after_probe(int64_t chunk, int64_t dep_rows_per_config,
                                 double unique_rows_per_config, int64_t hidden, int64_t state_bytes,
                                 int64_t probe_configs);

/// Default bound of score_graph's per-graph inference cache (bytes; InferenceBudget::cache_bytes
/// of the default `eval.memory_mb`).
inline constexpr int64_t kDefaultInferenceCacheBytes = int64_t{256} << 20;

/// Scores (higher = slower) of `configs` for graph g, streaming segments one at a time without
/// saved state, at most `chunk` configs per forward pass and at most `max_chunk_bytes` of config
/// rows per chunk (inference_chunk chooses both; at least one config; layout rows are held one
/// column block at a time, see the overload below). Under score_sum with skip_independent the
/// scores omit the config-independent segments (a per-graph constant), which no ranking metric
/// sees. With model.hwmodel_prior each score gets + w * z once (Model::add_prior), as in training.
/// What does not depend on the config is computed once per call and kept for the later chunks while
/// it fits `cache_bytes` (docs/gst.md#inference-cache): per segment its rebuilt rows and its
/// config-independent layer rows (Model::encode_base), or the readout of an independent segment;
/// segments beyond the bound are recomputed per chunk. The scores are the same bit for bit at any
/// bound (0 = no cache). With model.config_attention a config's score depends on the configs of its
/// chunk; opt.tta_orders = N > 1 then scores the configs in N orders (the given one, then N - 1
/// shuffles from a fixed seed) and returns each config's mean score
/// (docs/model.md#test-time-averaging).
std::vector<float> score_graph(Model& model, const PreparedGraph& g,
                               std::span<const int64_t> configs, int64_t chunk,
                               const GstOptions& opt,
                               int64_t max_chunk_bytes = kMaxConfigChunkBytes,
                               int64_t cache_bytes = kDefaultInferenceCacheBytes);

/// The same with what one chunk may hold from `chunk` (inference_chunk): chunk.configs configs and
/// chunk.max_bytes of config rows per pass; with deduplicated layout rows a first chunk of at most
/// chunk.probe_configs configs, then chunks sized by dedupe_chunk_after_probe to keep their state
/// within chunk.state_bytes. The cache is not filled when every config is scored in one chunk (it
/// would serve no later chunk). The scores are those of the overload above for the same chunks.
/// Layout rows are read per chunk in column blocks (chunk.block_bytes; docs/gst.md#inference), so
/// the config rows held are O(K x configurable nodes of a few segments x 18), not O(K x nc x 18);
/// the blocks change what is held, never the chunks or the scores. `stats` (optional) receives what
/// was held and read.
std::vector<float> score_graph(Model& model, const PreparedGraph& g,
                               std::span<const int64_t> configs, const InferenceChunk& chunk,
                               const GstOptions& opt, int64_t cache_bytes,
                               InferenceStats* stats = nullptr);

/// Per-segment readouts of `configs` (forward only), the input of head finetuning: [S_eff] tensors
/// of [K, W] (W = ModelConfig::readout_width()) for the segments score_graph would use (independent
/// ones computed with K = 1 and broadcast). The analytical prior is not in them (prior_values gives
/// its input).
std::vector<Tensor> segment_readouts(Model& model, const PreparedGraph& g,
                                     std::span<const int64_t> configs, const GstOptions& opt);

}  // namespace segrank
