// RunConfig: the whole run configuration as plain structs (docs/config.md,
// docs/style.md#config-values). Read once from TOML by load_config (trainer/config.cpp, the only
// toml++ includer) and passed down by value. In-class defaults equal configs/default.toml, which
// documents every key.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/collection.h"
#include "gnn/core/enum_names.h"
#include "gnn/loss.h"
#include "gnn/model.h"
#include "gnn/ops/matmul.h"
#include "gnn/ops/pointwise.h"
#include "gnn/optim.h"
#include "sampling/config_sampler.h"
#include "sampling/dedupe.h"
#include "sampling/ownership.h"
#include "sampling/segment_sampler.h"
#include "segments/partitioner.h"

namespace segrank {
/// Section structs of RunConfig and the enums that only the config has live in segrank::cfg. Keys
/// that choose a library behaviour hold that library's enum (Activation, PartitionMethod, ...),
/// whose one name table is beside the enum (gnn/core/enum_names.h).
namespace cfg {

// ---- config-only enums (docs/style.md#enums): one name table each (config_check.cpp), read by
// ---- load_config, written by to_string (the TOML spelling).

/// data.holdout: what the validation set holds out (docs/sampling.md#holdout).
enum class Holdout { kGraphs, kConfigs };
/// eval.metric: model selection / early stopping metric. kKaggle = the collection's Kaggle score
/// (tile: 1 - slowdown@5, layout: Kendall tau), averaged over collections. Higher is better except
/// for the slowdowns, where lower is better.
enum class EvalMetric { kKaggle, kKendall, kOpa, kSlowdown1, kSlowdown5, kSlowdown10 };

/// Names: "graphs", "configs".
std::span<const EnumName<Holdout>> enum_names(Holdout);
/// Names: "kaggle", "kendall", "opa", "slowdown_1", "slowdown_5", "slowdown_10".
std::span<const EnumName<EvalMetric>> enum_names(EvalMetric);
std::string_view to_string(Holdout v);
std::string_view to_string(EvalMetric v);

// ---- sections. Comments give the meaning; configs/default.toml repeats them per key.

/// [data]: where graphs come from and how validation is held out.
struct DataSection {
    std::string root = "data/npz";           ///< collection root (npz dirs) or folder of .h5 stores
    std::vector<std::string> collections{};  ///< e.g. "tile:xla", "layout:xla:random"; empty = all
    std::string train_split = "train";       ///< split trained on
    std::string valid_split = "valid";       ///< split evaluated when holdout = graphs, folds = 0
    StoreFormat store = StoreFormat::kNpz;   ///< npz | hdf5
    Holdout holdout = Holdout::kGraphs;      ///< graphs | configs
    double holdout_fraction = 0.2;  ///< holdout = configs: fraction of each graph's configs
    int holdout_folds = 0;          ///< graphs: 0 = valid split, k >= 2 k-fold, -1 leave-one-out
    int holdout_fold = 0;           ///< which fold (or which graph for leave-one-out)
    std::vector<std::string> ingest{};  ///< raw tuning .pb files ingested into root first
    bool normalize = true;              ///< fit the node-feature Normalizer on the train split
    int max_graphs = 0;                 ///< use at most this many graphs per split (0 = all)
    bool operator==(const DataSection&) const = default;
};

/// [model]: sizes of the GNN (docs/model.md).
struct ModelSection {
    int hidden = 128;     ///< H
    int layers = 3;       ///< SAGE layers L
    int opcode_dim = 32;  ///< opcode embedding width
    int config_dim = 32;  ///< config encoder output width
    Activation activation = Activation::kGelu;
    double dropout = 0.0;  ///< in [0, 1)
    ConfigJoin config_join = ConfigJoin::kEarly;
    SegmentAggregate aggregate = SegmentAggregate::kScoreSum;
    int prune_hops = -1;  ///< keep nodes within R hops of a configurable one; -1 = off
    bool config_independence =
        true;  ///< exact config-independence shortcut (docs/model.md#config-independence)
    /// the hwmodel estimate of each config as an input to the score
    /// (docs/model.md#analytical-prior)
    bool hwmodel_prior = false;
    /// padded-byte and copy features of the configured layouts (docs/model.md#layout-byte-features)
    bool layout_bytes = false;
    /// relayout, lane / sublane move and contiguity features (docs/model.md#layout-access-features)
    bool layout_access = false;
    /// each node's while-loop depth as one more node feature (layout only;
    /// docs/model.md#loop-depth)
    bool loop_depth = false;
    /// log2 of the product of each node's enclosing loops' trip counts and an unknown flag as two
    /// more node features (layout only; docs/model.md#loop-trip-counts)
    bool trip_counts = false;
    /// operand type of the large matmuls (docs/model.md#precision); bf16 falls back to fp32 on
    /// CPUs without native bf16
    MatmulPrecision precision = MatmulPrecision::kFp32;
    /// readout pooling per config: mean_max | mean (docs/model.md#readout-and-head)
    Readout readout = Readout::kMeanMax;
    /// attention over each node's K config rows after every SAGE layer
    /// (docs/model.md#cross-config-attention)
    bool config_attention = false;
    int config_attention_dim = 32;  ///< its query / key / value width d (>= 1)
    /// tile only: the kernel model's per-config cost components as config-code inputs
    /// (docs/model.md#tile-cost-features)
    bool tile_cost_features = false;
    bool operator==(const ModelSection&) const = default;
};

/// [segments]: Graph Segment Training (docs/gst.md).
struct SegmentsSection {
    PartitionMethod partition = PartitionMethod::kContiguous;
    int max_nodes = 1000;    ///< segment size bound; 0 = whole graph is one segment
    int halo_hops = 0;       ///< read-only context hops around each segment
    int fresh = 1;           ///< k segments backpropagated per graph and step
    double keep_prob = 0.5;  ///< stale embedding dropout keep probability p
    HistoryInit history_init = HistoryInit::kFresh;
    int64_t history_max_mb = 1024;  ///< HistoryTable memory cap per rank (MiB); 0 = unlimited
    int64_t max_staleness = 0;      ///< recompute entries older than T steps; 0 = unlimited
    int finetune_epochs = 0;        ///< prediction head finetuning epochs after training
    bool operator==(const SegmentsSection&) const = default;
};

/// [sampling]: graphs and configs per step (docs/sampling.md).
struct SamplingSection {
    int batch_graphs = 8;  ///< B graphs per global batch
    int configs = 32;      ///< K configs per graph, without replacement
    ConfigStrategy strategy = ConfigStrategy::kUniform;
    int config_pool = 0;                   ///< fixed per-graph pool of P configs; 0 = off
    DedupeMode dedupe = DedupeMode::kMin;  ///< training only
    int64_t seed = 0;                      ///< seeds batch, config and segment sampling
    bool operator==(const SamplingSection&) const = default;
};

/// [loss]: `terms = [{name = "listmle", weight = 1.0}, ...]` plus shared parameters
/// (docs/losses.md). A top-level `loss = [{...}]` array (the older spelling,
/// docs/config.md#loss-terms) is accepted as `[loss] terms`.
struct LossSection {
    std::vector<LossTerm> terms{LossTerm{LossKind::kListMle, 1.0}};
    double margin = 0.1;       ///< pairwise_hinge margin
    double temperature = 1.0;  ///< listmle temperature T
    bool operator==(const LossSection&) const = default;
};

/// [optim]: AdamW and the learning-rate schedule.
struct OptimSection {
    double lr = 1e-3;
    double weight_decay = 0.01;  ///< weight matrices only
    double beta1 = 0.9;
    double beta2 = 0.999;
    double eps = 1e-8;
    double clip_norm = 1.0;  ///< global gradient-norm clip; 0 = off
    LrScheduleKind schedule = LrScheduleKind::kCosine;
    int64_t warmup_steps = 100;
    bool operator==(const OptimSection&) const = default;
};

/// [train]: the loop, logging and checkpoints.
struct TrainSection {
    int64_t steps = 1000;      ///< stop after this many steps (0 = no step limit)
    int64_t epochs = 0;        ///< stop after this many epochs (0 = no epoch limit)
    int64_t eval_every = 100;  ///< steps between evaluations (0 = only at the end)
    int64_t log_every = 10;    ///< steps between metrics JSONL lines
    int patience = 0;          ///< early stop after this many evals without improvement; 0 = off
    std::string run_dir = "runs/default";
    int threads = 0;               ///< OpenMP threads of a single-process run; 0 = all cores
    int64_t checkpoint_every = 0;  ///< steps between "last" checkpoints (0 = at evals and the end)
    int64_t seed = 0;              ///< parameter initialization (dropout masks use sampling.seed)
    bool progress = true;          ///< progress bar on rank 0
    bool operator==(const TrainSection&) const = default;
};

/// [eval]: what evaluation measures.
struct EvalSection {
    std::string split = "valid";  ///< split scored by `segrank evaluate` by default
    std::string indices = "";     ///< JSON graph name -> config indices; "" = all configs
    EvalMetric metric = EvalMetric::kKaggle;
    /// An evaluation whose selection value equals the best so far replaces the "best" checkpoint
    /// (a saturated metric, e.g. a tile score of 1.0 on a few kernels, then keeps the more trained
    /// model); it is not an improvement for train.patience. false = the earlier one stays.
    bool select_later_on_ties = true;
    int chunk_configs = 256;  ///< configs scored per forward pass (at most)
    /// MiB inference may hold per graph beside the graph's own arrays: the inference cache, the
    /// chunk state and the chunk's config rows are derived from it (docs/gst.md#memory-budget).
    int memory_mb = 1024;
    /// MiB of config-independent state inference keeps per graph across chunks, out of memory_mb
    /// (at most half of it; 0 = none; -1 = a quarter of memory_mb; docs/gst.md#inference-cache).
    int cache_mb = -1;
    /// with model.config_attention: orders (chunkings) each config is scored in, averaged
    /// (docs/model.md#test-time-averaging); 1 = the given order only
    int tta_orders = 1;
    /// inference computes each distinct (node, layer) row once (layout without
    /// model.config_attention; docs/model.md#row-deduplication); false = every (node, config) row
    bool dedupe_rows = true;
    /// configs per forward pass with dedupe_rows (layout without model.config_attention)
    int dedupe_chunk_configs = 16384;
    bool operator==(const EvalSection&) const = default;
};

/// [dist]: MPI data parallelism (docs/architecture.md#distribution).
struct DistSection {
    int threads_per_rank = 0;  ///< OpenMP threads per rank under mpirun; 0 = cores / local ranks
    /// Which rank owns which graph (docs/sampling.md#ownership).
    OwnershipMode ownership = OwnershipMode::kModulo;
    /// per_step only: each step's graphs are cut into slices of their sampled configs, assigned by
    /// longest-processing-time over all ranks (docs/distributed.md#config-slices)
    bool slice_configs = false;
    /// per_step only: each step's fresh and kept stale GST segments (cut into config ranges where
    /// large) are the units assigned over all ranks (docs/distributed.md#segment-units)
    bool segment_units = false;
    int fail_rank = -1;  ///< test hook: this rank throws at step fail_step; -1 = off
    int64_t fail_step = 0;
    bool operator==(const DistSection&) const = default;
};

/// [hwmodel]: analytical TPU timing model (docs/hwmodel.md).
struct HwmodelSection {
    std::string hardware = "tpu_v3_core";  ///< hardware table name (validated by hwmodel/)
    bool operator==(const HwmodelSection&) const = default;
};

/// Where the values of a loaded config came from, so that checks made after loading (e.g. the
/// Trainer, which learns the task of unrestricted data.collections from the data) can point at the
/// key. Not configuration: ignored by ==, not written by dump_config.
struct KeySources {
    std::string file;                       ///< source name given to the loader; "" = built in code
    std::map<std::string, std::string> at;  ///< dotted key -> "file:line:col" or "--set key=value"
    bool operator==(const KeySources&) const { return true; }
};

}  // namespace cfg

/// The whole run configuration (docs/config.md). `RunConfig{}` equals configs/default.toml.
struct RunConfig {
    cfg::DataSection data;
    cfg::ModelSection model;
    cfg::SegmentsSection segments;
    cfg::SamplingSection sampling;
    cfg::LossSection loss;
    cfg::OptimSection optim;
    cfg::TrainSection train;
    cfg::EvalSection eval;
    cfg::DistSection dist;
    cfg::HwmodelSection hwmodel;
    cfg::KeySources sources;  ///< filled by load_config*; empty for configs built in code
    bool operator==(const RunConfig&) const = default;
};

/// Loads a TOML config file and applies `--set section.key=value` overrides (in order).
/// Every problem of every kind (unknown key, wrong type, bad enum name, out-of-range value,
/// inconsistent keys, malformed `--set`) is reported in one pass, one per line, in one
/// segrank::Error, sorted by line (file-level problems next, then overrides in order):
///   `configs/x.toml:12:1: optim.lr: expected > 0, got -1`
///   `configs/x.toml:3:1: optim.learning_rate: unknown key (did you mean 'optim.lr'?)`
///   `--set optim.lr=abc: optim.lr: expected a number, got string "abc"`
/// Unknown sections/keys, wrong types, out-of-range values, bad enum names and inconsistent keys
/// are errors. An override value is parsed as a TOML value with the same typing rules; a value
/// that is not valid TOML is taken as a bare string (`--set data.root=/tmp/x`).
/// Missing keys keep their defaults. Relative paths are kept as written (relative to the working
/// directory of the process). Throws segrank::Error naming `path` when it does not exist, is a
/// directory ("<path>: is a directory, expected a TOML file"), cannot be read or parsed (a TOML
/// syntax error stops the parse: it is the only problem reported). A range or cross-key problem
/// about a key whose value was refused (wrong type) is not reported, as that key holds its default.
/// The result's `sources` records where each key was set (see key_location).
RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides = {});

/// Same as load_config on TOML text; `source_name` is used in messages (e.g. a checkpoint's
/// stored config, or "<string>" in tests).
RunConfig load_config_string(std::string_view toml_text, std::string_view source_name,
                             const std::vector<std::string>& overrides = {});

/// Same as load_config_string for a config a segrank run stored (a checkpoint's config_toml): keys
/// that earlier versions wrote and that were removed since (e.g. hwmodel.noise_sigma) are dropped,
/// so checkpoints of earlier versions still load. A config file naming such a key is an error
/// saying what replaced it. Throws segrank::Error as load_config_string does.
RunConfig load_stored_config(std::string_view toml_text, std::string_view source_name);

/// Where `dotted` (e.g. "model.config_join") was set, for messages of later checks: its
/// "file:line:col" or "--set key=value"; the source name when the config was loaded but the key
/// kept its default; "" for a config built in code (no sources).
std::string key_location(const RunConfig& cfg, const std::string& dotted);

/// Checks ranges and cross-key consistency of an already built RunConfig (load_config calls it);
/// throws segrank::Error listing every problem as `key: expected ..., got ...`.
void validate_config(const RunConfig& cfg);

/// The effective config as commented TOML, every key present; load_config_string(dump_config(c))
/// == c exactly (doubles are written in shortest round-trip form).
std::string dump_config(const RunConfig& cfg);

/// Writes dump_config(cfg) to `file` (e.g. <run_dir>/config.toml) through a temporary file and a
/// rename, so a crash never leaves a torn file. Creates missing parent directories.
/// Throws segrank::Error naming the path when it cannot be written.
void save_config(const RunConfig& cfg, const std::filesystem::path& file);

/// One documented key of the schema, for help texts and docs.
struct ConfigKeyInfo {
    std::string key;            ///< dotted: "optim.lr"
    std::string doc;            ///< one-line description
    std::string default_value;  ///< TOML spelling of the default
};
/// Every key of the schema in file order.
std::vector<ConfigKeyInfo> config_keys();

/// OpenMP threads for this process: under several local ranks (local_size > 1)
/// dist.threads_per_rank, else train.threads; 0 means max(1, hardware_threads / local_size).
int resolve_threads(const RunConfig& cfg, int local_size, int hardware_threads);

/// Levenshtein edit distance (used for "did you mean" suggestions).
int edit_distance(std::string_view a, std::string_view b);

}  // namespace segrank
