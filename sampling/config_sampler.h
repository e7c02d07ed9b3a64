// Config sampling per graph and step (docs/sampling.md#configs-per-graph): K of the graph's
// training candidates, without replacement, by strategy uniform / fast_biased / stratified,
// optionally from a fixed per-graph pool.
// Randomness: Rng::derive(seed, step, graph_id, "configs") per step and
// Rng::derive(seed, 0, graph_id, "config_pool") for the pool; never rank or thread.
#pragma once
#include <cstdint>
#include <string_view>
#include <vector>

#include "gnn/core/enum_names.h"
#include "sampling/dedupe.h"

namespace segrank {

/// `sampling.strategy`.
enum class ConfigStrategy { kUniform, kFastBiased, kStratified };

/// Names: "uniform", "fast_biased", "stratified".
std::span<const EnumName<ConfigStrategy>> enum_names(ConfigStrategy);
/// Parses "uniform" | "fast_biased" | "stratified"; throws segrank::Error listing the valid names.
ConfigStrategy parse_config_strategy(std::string_view name);
std::string_view to_string(ConfigStrategy strategy);

/// The sampling section's config keys (docs/style.md#config-values: plain values).
struct ConfigSamplerOptions {
    int64_t configs = 32;  ///< K (>= 1); clamped to the candidates
    ConfigStrategy strategy = ConfigStrategy::kUniform;
    int64_t pool = 0;  ///< P; 0 = no pool (all candidates)
    uint64_t seed = 0;
};

/// Samples configs of ONE graph. Strategies, over the n candidates ranked by ascending target
/// (rank 0 = fastest; equal targets ranked by lower file index):
/// - uniform: K of n uniformly (partial Fisher-Yates).
/// - fast_biased: Gumbel top-K with logits (n - rank) / n, i.e. sampling without replacement with
///   weights proportional to exp((n - rank) / n) (the TpuGraphs baseline): the fastest config is
///   e ~ 2.7 times as likely as the slowest to be drawn first.
/// - stratified: with b = floor(n / 3), the best third is ranks [0, b), the worst third ranks
///   [n - b, n). floor(K / 3) configs are drawn uniformly from the best third, floor(K / 3) from
///   the worst third, and the remaining K - 2 floor(K / 3) uniformly from all candidates not yet
///   drawn (so each third gets at least floor(K / 3); always satisfiable because K <= n).
/// Pool (P > 0 and P < n): P candidates drawn uniformly once per graph from stream "config_pool"
/// (step-independent, so the pool is fixed for the whole run); every step samples from the pool.
class ConfigSampler {
public:
    /// candidates: the graph's training configs (usually from dedupe_configs), n >= 1, finite
    /// targets. Throws segrank::Error (naming the graph id) on empty candidates, configs < 1,
    /// pool < 0 or non-finite targets.
    ConfigSampler(const ConfigSamplerOptions& options, int64_t graph_id, ConfigSet candidates);

    /// The K = min(configs, pool size) configs of this step (distinct file indices, with targets),
    /// in draw order. Deterministic in (seed, step, graph_id). step >= 0.
    ConfigSet sample(int64_t step) const;

    /// The candidates steps draw from (the pool if one is used), ranked fastest first.
    const ConfigSet& pool() const { return pool_; }
    int64_t graph_id() const { return graph_id_; }

private:
    ConfigSamplerOptions options_;
    int64_t graph_id_;
    ConfigSet pool_;  // sorted by (target, index): position = rank
};

}  // namespace segrank
