// Option mapping (docs/style.md#config-values): the sections of a RunConfig read once into the
// plain option structs of the library folders (ModelConfig, GstOptions, PrepareOptions) and the
// process's matmul precision.
#pragma once
#include <cstdint>
#include <string>

#include "data/graph.h"
#include "gnn/model.h"
#include "gnn/ops/matmul.h"
#include "gst/gst.h"
#include "gst/inference_budget.h"
#include "gst/prepared_graph.h"
#include "trainer/config.h"

namespace segrank {

/// Maps the config sections to library option structs (docs/style.md#config-values). feat_dim:
/// the normalizer's output columns F'; for a layout task the model's feat_dim adds the loop-depth
/// column with model.loop_depth and the two trip columns with model.trip_counts. Throws
/// segrank::Error when the resulting ModelConfig is invalid (ModelConfig::validate).
ModelConfig model_config_from(const RunConfig& cfg, Task task, int64_t feat_dim);

/// Sets this process's matmul precision from `model.precision` (resolve_matmul_precision) and
/// returns what is used; when bf16 falls back to fp32, prints one line saying so to stderr (if
/// `announce`).
MatmulPrecision apply_model_precision(const RunConfig& cfg, bool announce);

/// The GST step and inference options: segment aggregation, SED (segments.fresh, keep_prob,
/// history_init, max_staleness), the loss terms, test-time orders and row dedupe (eval.*).
GstOptions gst_options_from(const RunConfig& cfg);

/// " (the settings that scale the loss, its gradients and the updates: optim.lr = 0.003
/// (configs/x.toml:24:1), ...; lower the one set too high, ...)": appended to a non-finite loss or
/// gradient error of a training step (GstOptions::nonfinite_hint), each key with where it was set.
std::string nonfinite_hint(const RunConfig& cfg);

/// Graph preparation: partition (segments.partition, max_nodes, the METIS seed = sampling.seed),
/// halo and prune hops, the hwmodel hardware.
PrepareOptions prepare_options_from(const RunConfig& cfg);

/// The inference memory budget of [eval] (eval.memory_mb, eval.cache_mb;
/// docs/gst.md#memory-budget). Throws segrank::Error naming the keys when they do not fit (a config
/// edited past validate_config, e.g. a checkpoint's).
InferenceBudget inference_budget_from(const RunConfig& cfg);

}  // namespace segrank
