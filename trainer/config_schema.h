// Internal to trainer/config*.cpp: the single list of RunConfig keys (name, member, doc, allowed
// range) walked by the TOML loader, the dumper and the validator, so the three cannot drift apart.
#pragma once
#include <cmath>
#include <limits>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "gnn/core/parallel.h"
#include "trainer/config.h"

namespace segrank::cfg::detail {

/// Allowed numeric range of a key (always also finite); `nonempty` for strings.
struct Check {
    double lo = -std::numeric_limits<double>::infinity();
    double hi = std::numeric_limits<double>::infinity();
    bool lo_open = false;
    bool hi_open = false;
    bool nonempty = false;

    bool ok(double v) const {
        if (!std::isfinite(v)) return false;
        if (lo_open ? !(v > lo) : !(v >= lo)) return false;
        if (hi_open ? !(v < hi) : !(v <= hi)) return false;
        return true;
    }
    bool bounded() const { return std::isfinite(lo) || std::isfinite(hi); }
    /// "> 0", ">= 1", "in [0, 1)", "a finite number".
    std::string describe() const;
};

inline Check ge(double lo) { return Check{.lo = lo}; }
inline Check gt(double lo) { return Check{.lo = lo, .lo_open = true}; }
/// [lo, hi] or [lo, hi) when hi_open.
inline Check in(double lo, double hi, bool hi_open = false) {
    return Check{.lo = lo, .hi = hi, .hi_open = hi_open};
}
inline Check nonempty() { return Check{.nonempty = true}; }

/// Upper bounds of the model sizes (docs/config.md#model-size-bounds): far above any useful value
/// (the shipped configs use H <= 128, L <= 3, widths <= 32), low enough that a typo fails in the
/// loader naming the key instead of running out of memory or for hours.
inline constexpr double kMaxHidden = 4096;
inline constexpr double kMaxLayers = 64;
/// Bound of model.opcode_dim, config_dim and config_attention_dim.
inline constexpr double kMaxEmbeddingDim = 1024;

/// Bounds of the optimizer and loss scales (docs/config.md#model-size-bounds), like the model
/// sizes far beyond any useful value (the shipped configs: lr 0.001-0.003, weight_decay 0.01, eps
/// 1e-8, temperature 1, margin 0.1, weights 1; Adam(W) practice: lr 1e-5-1e-2, weight decay
/// 0-0.1, eps 1e-8-1): a typo (1e30) fails in the loader naming the key instead of a non-finite
/// loss at step 1, a constant loss, or a model that silently learns nothing.
inline constexpr double kMaxLearningRate = 1;
inline constexpr double kMaxWeightDecay = 10;
inline constexpr double kMaxAdamEps = 1;
inline constexpr double kMinTemperature = 1e-3;
inline constexpr double kMaxTemperature = 1e3;
inline constexpr double kMaxMargin = 100;
/// Bound of each loss.terms weight (checked in config_check.cpp).
inline constexpr double kMaxLossWeight = 1000;
/// Bound of train.epochs (2^31 - 1, as segments.finetune_epochs): epochs x steps per epoch stays
/// far inside int64 (the step count the run computes from it).
inline constexpr double kMaxEpochs = 2147483647;
/// Bound of train.steps (2^31 - 1): the steps a HistoryTable entry records (segments/).
inline constexpr double kMaxTrainSteps = 2147483647;

/// (lo, hi]: lo excluded.
inline Check above_up_to(double lo, double hi) {
    return Check{.lo = lo, .hi = hi, .lo_open = true};
}

/// The schema: visits every key in file order. V provides
///   section(name, doc) and field(key, member&, doc, Check = {}).
/// C is RunConfig or const RunConfig.
template <typename V, typename C>
void visit_schema(V& v, C& c) {
    v.section("data", "where graphs come from and how validation is held out");
    v.field("root", c.data.root,
            "collection root (<task>/<source>[/<search>]/<split>/*.npz) or folder of .h5 stores",
            nonempty());
    v.field("collections", c.data.collections,
            "collections to use, e.g. [\"tile:xla\", \"layout:xla:random\"]; [] = all found");
    v.field("train_split", c.data.train_split, "split trained on", nonempty());
    v.field("valid_split", c.data.valid_split,
            "split evaluated (holdout = graphs, holdout_folds = 0)", nonempty());
    v.field("store", c.data.store, "on-disk format: npz | hdf5");
    v.field("holdout", c.data.holdout,
            "held-out set: graphs (valid split or folds) | configs (a fraction of each graph's "
            "configs)");
    v.field("holdout_fraction", c.data.holdout_fraction,
            "holdout = configs: fraction of each graph's configs held out", in(0, 1, true));
    v.field(
        "holdout_folds", c.data.holdout_folds,
        "holdout = graphs: 0 = valid split; k >= 2 = k-fold over train graphs; -1 = leave-one-out");
    v.field("holdout_fold", c.data.holdout_fold,
            "held-out fold (k-fold) or graph index (leave-one-out), from 0", ge(0));
    v.field("ingest", c.data.ingest, "raw XLA tuning .pb files ingested into root before training");
    v.field("normalize", c.data.normalize,
            "fit the node-feature Normalizer on the train split (docs/model.md)");
    v.field("max_graphs", c.data.max_graphs, "use at most this many graphs per split (0 = all)",
            ge(0));

    v.section("model", "GNN sizes (docs/model.md)");
    v.field("hidden", c.model.hidden, "hidden width H", in(1, kMaxHidden));
    v.field("layers", c.model.layers, "SAGE layers L", in(1, kMaxLayers));
    v.field("opcode_dim", c.model.opcode_dim, "opcode embedding width (121 ids)",
            in(1, kMaxEmbeddingDim));
    v.field("config_dim", c.model.config_dim, "config encoder output width",
            in(1, kMaxEmbeddingDim));
    v.field("activation", c.model.activation, "gelu | relu | leaky_relu");
    v.field("dropout", c.model.dropout, "dropout probability in training", in(0, 1, true));
    v.field("config_join", c.model.config_join,
            "early (at the input) | late (before the head; tile only)");
    v.field("aggregate", c.model.aggregate,
            "score_sum (sum of segment scores) | embedding_mean (head over mean readout)");
    v.field("prune_hops", c.model.prune_hops,
            "keep only nodes within R hops of a configurable node; -1 = off", ge(-1));
    v.field("config_independence", c.model.config_independence,
            "compute config-independent rows once and skip such segments "
            "(docs/model.md#config-independence)");
    v.field("hwmodel_prior", c.model.hwmodel_prior,
            "add w * z to each config's graph score, z its standardized log hwmodel estimate, w "
            "learned (docs/model.md#analytical-prior)");
    v.field("layout_bytes", c.model.layout_bytes,
            "layout only: add per-config padded-byte and copy features of the configured layouts "
            "to the config code (docs/model.md#layout-byte-features)");
    v.field("layout_access", c.model.layout_access,
            "layout only: add per-config access features of the configured layouts (relayouted "
            "tensors, lane / sublane moves, contiguous runs of the copy) to the config code "
            "(docs/model.md#layout-access-features)");
    v.field("loop_depth", c.model.loop_depth,
            "layout only: add each node's while-loop depth (how many while loops run it; the "
            "features carry no trip counts) as a node feature (docs/model.md#loop-depth)");
    v.field("trip_counts", c.model.trip_counts,
            "layout only: add log2 of the product of the trip counts of the loops enclosing each "
            "node and a flag for an unknown count as two node features, read from the graph's "
            "node_loop_trips (ingest, synth; unknown in published npz files) "
            "(docs/model.md#loop-trip-counts)");
    v.field("precision", c.model.precision,
            "fp32 | bf16 (bf16 operands, fp32 accumulation, for products of at least 2^20 FLOPs; "
            "fp32 where the CPU lacks avx512_core_bf16) | bf16_emulated (bf16 rounding on any CPU, "
            "not faster) (docs/model.md#precision)");
    v.field("readout", c.model.readout,
            "pooling of each segment's last-layer rows per config: mean_max ([mean, max], 2H "
            "columns) | mean (the mean alone, H columns; docs/model.md#readout-and-head)");
    v.field(
        "config_attention", c.model.config_attention,
        "after each SAGE layer, each node's K config rows attend to each other; a config's "
        "score then depends on the configs scored with it (docs/model.md#cross-config-attention)");
    v.field("config_attention_dim", c.model.config_attention_dim,
            "query / key / value width d of model.config_attention", in(1, kMaxEmbeddingDim));
    v.field("tile_cost_features", c.model.tile_cost_features,
            "tile only: add the kernel model's per-config cost components (time breakdown, grid "
            "steps, waste, VMEM, re-reads, invalid flag) to the config code "
            "(docs/model.md#tile-cost-features)");

    v.section("segments", "Graph Segment Training (docs/gst.md)");
    v.field("partition", c.segments.partition, "contiguous | splits | metis");
    v.field("max_nodes", c.segments.max_nodes,
            "segment size bound in nodes; 0 = one segment per graph", ge(0));
    v.field("halo_hops", c.segments.halo_hops,
            "hops of read-only context nodes around each segment", ge(0));
    v.field("fresh", c.segments.fresh, "segments backpropagated per graph and step (k)", ge(1));
    v.field("keep_prob", c.segments.keep_prob, "stale embedding dropout keep probability p",
            in(0, 1));
    v.field("history_init", c.segments.history_init,
            "missing history entries: fresh (forward-only) | zero");
    v.field("history_max_mb", c.segments.history_max_mb,
            "HistoryTable cap per rank in MiB, LRU eviction; 0 = unlimited", ge(0));
    v.field("max_staleness", c.segments.max_staleness,
            "recompute history entries older than this many steps; 0 = never", ge(0));
    v.field("finetune_epochs", c.segments.finetune_epochs,
            "prediction head finetuning epochs after training; 0 = off", ge(0));

    v.section("sampling", "graphs and configs of each step (docs/sampling.md)");
    v.field("batch_graphs", c.sampling.batch_graphs,
            "graphs per global batch (B, same at any number of ranks)", ge(1));
    v.field("configs", c.sampling.configs, "configs sampled per graph without replacement (K)",
            ge(1));
    v.field("strategy", c.sampling.strategy, "uniform | fast_biased | stratified");
    v.field("config_pool", c.sampling.config_pool,
            "fixed per-graph pool of P configs for the run; 0 = off", ge(0));
    v.field("dedupe", c.sampling.dedupe, "duplicate config rows in training: min | mean | keep");
    v.field("seed", c.sampling.seed,
            "seed of batch, config and segment sampling and of dropout masks", ge(0));

    v.section("loss",
              "training loss (docs/losses.md); terms: pairwise_hinge | pairwise_logistic | listmle "
              "| mse");
    v.field("terms", c.loss.terms, "weighted sum of loss terms");
    v.field("margin", c.loss.margin, "pairwise_hinge margin", in(0, kMaxMargin));
    v.field("temperature", c.loss.temperature, "listmle temperature T",
            in(kMinTemperature, kMaxTemperature));

    v.section("optim", "AdamW and learning-rate schedule");
    v.field("lr", c.optim.lr, "peak learning rate", above_up_to(0, kMaxLearningRate));
    v.field("weight_decay", c.optim.weight_decay,
            "AdamW decoupled weight decay (weight matrices only)", in(0, kMaxWeightDecay));
    v.field("beta1", c.optim.beta1, "AdamW first-moment decay", in(0, 1, true));
    v.field("beta2", c.optim.beta2, "AdamW second-moment decay", in(0, 1, true));
    v.field("eps", c.optim.eps, "AdamW epsilon", above_up_to(0, kMaxAdamEps));
    v.field("clip_norm", c.optim.clip_norm, "global gradient-norm clip; 0 = off", ge(0));
    v.field("schedule", c.optim.schedule,
            "constant | cosine (linear warmup, then cosine decay to 0)");
    v.field("warmup_steps", c.optim.warmup_steps, "linear warmup steps", ge(0));

    v.section("train", "training loop, logging and checkpoints");
    v.field("steps", c.train.steps, "stop after this many steps (0 = no step limit)",
            in(0, kMaxTrainSteps));
    v.field("epochs", c.train.epochs, "stop after this many epochs (0 = no epoch limit)",
            in(0, kMaxEpochs));
    v.field("eval_every", c.train.eval_every, "steps between evaluations (0 = only at the end)",
            ge(0));
    v.field("log_every", c.train.log_every, "steps between metrics JSONL lines", ge(1));
    v.field("patience", c.train.patience,
            "early stop after this many evaluations without improvement; 0 = off", ge(0));
    v.field("run_dir", c.train.run_dir,
            "run directory: effective config, metrics.jsonl, checkpoints, report", nonempty());
    v.field("threads", c.train.threads, "OpenMP threads of a single-process run; 0 = all cores",
            in(0, kMaxThreads));
    v.field("checkpoint_every", c.train.checkpoint_every,
            "steps between 'last' checkpoints (0 = at evaluations and the end)", ge(0));
    v.field("seed", c.train.seed, "seed of parameter initialization", ge(0));
    v.field("progress", c.train.progress, "progress bar on rank 0");

    v.section("eval", "evaluation");
    v.field("split", c.eval.split, "split scored by `segrank evaluate` by default", nonempty());
    v.field("indices", c.eval.indices,
            "JSON file: graph name -> config indices to score; \"\" = all configs");
    v.field("metric", c.eval.metric,
            "selection / early-stopping metric: kaggle | kendall | opa | slowdown_1 | slowdown_5 | "
            "slowdown_10");
    v.field("select_later_on_ties", c.eval.select_later_on_ties,
            "an evaluation equal to the best so far replaces the best checkpoint (not an "
            "improvement for train.patience); false = the earlier one stays");
    v.field("chunk_configs", c.eval.chunk_configs,
            "configs scored per forward pass in evaluation (at most; eval.memory_mb may cut it)",
            ge(1));
    v.field("memory_mb", c.eval.memory_mb,
            "MiB inference may hold per graph beside the graph's own arrays: the cache, the chunk "
            "state and the chunk's config rows are derived from it (docs/gst.md#memory-budget)",
            in(16, 1 << 20));
    v.field("cache_mb", c.eval.cache_mb,
            "MiB of config-independent rows inference keeps per graph across chunks, out of "
            "eval.memory_mb (at most half); 0 = none; -1 = a quarter of eval.memory_mb "
            "(docs/gst.md#inference-cache)",
            in(-1, 1 << 20));
    v.field("tta_orders", c.eval.tta_orders,
            "with model.config_attention: score every config in this many shuffled orders (fixed "
            "seed) and average; 1 = the given order (docs/model.md#test-time-averaging)",
            in(1, 1024));
    v.field(
        "dedupe_rows", c.eval.dedupe_rows,
        "inference computes each distinct (node, layer) row once: configs that agree inside a "
        "node's receptive field share its row (layout without model.config_attention; scores "
        "equal the dense path's up to float rounding, docs/model.md#row-deduplication); false = "
        "every (node, config) row");
    v.field("dedupe_chunk_configs", c.eval.dedupe_chunk_configs,
            "configs scored per forward pass when rows are deduplicated (eval.dedupe_rows on a "
            "layout model without model.config_attention; eval.chunk_configs applies otherwise)",
            ge(1));

    v.section("dist", "MPI data parallelism (docs/architecture.md#distribution)");
    v.field("threads_per_rank", c.dist.threads_per_rank,
            "OpenMP threads per rank under mpirun; 0 = cores / local ranks", in(0, kMaxThreads));
    v.field("ownership", c.dist.ownership,
            "graph -> rank: modulo (graph id % ranks) | balanced (longest-processing-time by "
            "nodes x configs) | per_step (each step's graphs split afresh by "
            "longest-processing-time; docs/sampling.md#ownership)");
    v.field("slice_configs", c.dist.slice_configs,
            "with ownership = per_step: cut each step's graphs into slices of their sampled "
            "configs, so that one graph's work can be split over ranks "
            "(docs/distributed.md#config-slices)");
    v.field("segment_units", c.dist.segment_units,
            "with ownership = per_step: split each step's work by GST segment (fresh and kept "
            "stale segments, cut into config ranges where large) over all ranks "
            "(docs/distributed.md#segment-units)");
    v.field("fail_rank", c.dist.fail_rank,
            "test hook: this rank throws at step fail_step; -1 = off", ge(-1));
    v.field("fail_step", c.dist.fail_step, "step at which fail_rank throws", ge(0));

    v.section("hwmodel", "analytical TPU timing model (docs/hwmodel.md)");
    v.field("hardware", c.hwmodel.hardware,
            "hardware table of the analytical prior and the tile cost features "
            "(model.hwmodel_prior, model.tile_cost_features): tpu_v3_core | tpu_v3_core_jax | "
            "tpu_v2_core | tpu_v4_megacore",
            nonempty());
}

/// One problem found by check_config: the dotted key it concerns and the message.
struct Problem {
    std::string key;
    std::string message;
};

/// Range checks of the schema plus cross-key consistency (used by validate_config and the loader).
std::vector<Problem> check_config(const RunConfig& cfg);

/// Shortest round-trip spelling of a double that TOML reads back as a float ("1.0", "1e-08").
std::string format_double(double v);
/// A TOML basic string literal with escapes.
std::string quote_toml(std::string_view s);

}  // namespace segrank::cfg::detail
