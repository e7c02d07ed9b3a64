// Option mapping: RunConfig sections -> ModelConfig, GstOptions, PrepareOptions, matmul precision
// (docs/style.md#config-values).
#include "trainer/config_options.h"

#include <cstdio>
#include <string>

#include "trainer/config_schema.h"

namespace segrank {

MatmulPrecision apply_model_precision(const RunConfig& cfg, bool announce) {
    const MatmulPrecision used = resolve_matmul_precision(cfg.model.precision);
    if (announce && used != cfg.model.precision)
        std::fprintf(stderr,
                     "segrank: model.precision = %s: this CPU has no native bf16 products (needs "
                     "avx512_core_bf16), using %s\n",
                     std::string(to_string(cfg.model.precision)).c_str(),
                     std::string(to_string(used)).c_str());
    set_matmul_precision(used);
    return used;
}

ModelConfig model_config_from(const RunConfig& cfg, Task task, int64_t feat_dim) {
    ModelConfig m;
    m.task = task;
    m.loop_depth = task == Task::kLayout && cfg.model.loop_depth;
    m.trip_counts = task == Task::kLayout && cfg.model.trip_counts;
    // The depth column, then the two trip columns, follow the normalized ones.
    m.feat_dim = feat_dim + (m.loop_depth ? 1 : 0) + (m.trip_counts ? kLoopTripCols : 0);
    m.hidden = cfg.model.hidden;
    m.layers = cfg.model.layers;
    m.opcode_dim = cfg.model.opcode_dim;
    m.config_dim = cfg.model.config_dim;
    m.activation = cfg.model.activation;
    m.dropout = static_cast<float>(cfg.model.dropout);
    m.config_join = cfg.model.config_join;
    m.exploit_independence = cfg.model.config_independence;
    m.hwmodel_prior = cfg.model.hwmodel_prior;
    m.layout_bytes = cfg.model.layout_bytes;
    m.layout_access = cfg.model.layout_access;
    m.readout = cfg.model.readout;
    m.config_attention = cfg.model.config_attention;
    m.config_attention_dim = cfg.model.config_attention_dim;
    m.tile_cost_features = cfg.model.tile_cost_features;
    m.validate();
    return m;
}

GstOptions gst_options_from(const RunConfig& cfg) {
    GstOptions o;
    o.aggregate = cfg.model.aggregate;
    o.fresh = cfg.segments.fresh;
    o.keep_prob = cfg.segments.keep_prob;
    o.history_init = cfg.segments.history_init;
    o.max_staleness = cfg.segments.max_staleness;
    o.seed = static_cast<uint64_t>(cfg.sampling.seed);
    o.loss_terms = cfg.loss.terms;
    o.loss_options.margin = cfg.loss.margin;
    o.loss_options.temperature = cfg.loss.temperature;
    o.skip_independent = cfg.model.config_independence && ranking_only(o.loss_terms);
    o.tta_orders = cfg.eval.tta_orders;
    o.dedupe_rows = cfg.eval.dedupe_rows;
    o.nonfinite_hint = nonfinite_hint(cfg);
    return o;
}

std::string nonfinite_hint(const RunConfig& cfg) {
    const auto key = [&](const char* k, double v) {
        const auto it = cfg.sources.at.find(k);
        return str(k, " = ", cfg::detail::format_double(v),
                   it == cfg.sources.at.end() ? "" : str(" (", it->second, ")"));
    };
    std::string terms;
    for (const auto& t : cfg.loss.terms)
        terms += str(terms.empty() ? "" : ", ", to_string(t.kind), " weight ",
                     cfg::detail::format_double(t.weight));
    const auto terms_at = cfg.sources.at.find("loss.terms");
    return str(
        " (the settings that scale the loss, its gradients and the updates: ",
        key("optim.lr", cfg.optim.lr), ", ", key("optim.weight_decay", cfg.optim.weight_decay),
        ", ", key("optim.clip_norm", cfg.optim.clip_norm), ", loss.terms = [", terms, "]",
        terms_at == cfg.sources.at.end() ? "" : str(" (", terms_at->second, ")"), ", ",
        key("loss.temperature", cfg.loss.temperature), ", ", key("loss.margin", cfg.loss.margin),
        "; lower the one set too high, docs/config.md#model-size-bounds)");
}

PrepareOptions prepare_options_from(const RunConfig& cfg) {
    PrepareOptions p;
    p.partition.method = cfg.segments.partition;
    p.partition.max_nodes = cfg.segments.max_nodes;
    p.partition.metis_seed = static_cast<uint64_t>(cfg.sampling.seed);
    p.halo_hops = cfg.segments.halo_hops;
    p.prune_hops = cfg.model.prune_hops;
    p.hardware = cfg.hwmodel.hardware;
    return p;
}

InferenceBudget inference_budget_from(const RunConfig& cfg) {
    return inference_budget(cfg.eval.memory_mb, cfg.eval.cache_mb);
}

}  // namespace segrank
