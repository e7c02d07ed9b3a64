// Per-graph synthesis: module -> configs -> hwmodel labels -> featurized graph record.
#include "hwmodel/synth/synth.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include "data/hlo/featurizer.h"
#include "gnn/core/check.h"
#include "hwmodel/kernel_cost.h"
#include "hwmodel/module_cost.h"
#include "hwmodel/module_index.h"
#include "hwmodel/synth/families.h"

namespace segrank::synth {
namespace {

constexpr uint64_t kTileTask = 0;
constexpr uint64_t kLayoutTask = 1;

std::string graph_name(const char* task, int64_t index) {
    char buf[64];
    std::snprintf(buf, sizeof(buf), "synth_%s_%06lld", task, static_cast<long long>(index));
    return buf;
}

// A log-uniform integer in [lo, hi] from one uniform draw.
int64_t log_uniform_int(Rng& rng, int64_t lo, int64_t hi) {
    const double a = std::log(static_cast<double>(lo)), b = std::log(static_cast<double>(hi) + 1);
    const auto x = static_cast<int64_t>(std::floor(std::exp(a + (b - a) * rng.uniform())));
    return std::clamp(x, lo, hi);
}

int64_t draw_nodes(Rng& rng, const SynthOptions& opt) {
    if (opt.log_uniform_nodes) return log_uniform_int(rng, opt.min_nodes, opt.max_nodes);
    const auto span = static_cast<uint64_t>(opt.max_nodes - opt.min_nodes + 1);
    return opt.min_nodes + static_cast<int64_t>(rng.uniform_int(span));
}

}  // namespace

int64_t graph_configs(const SynthOptions& opt, Task task, int64_t index) {
    if (opt.max_configs <= opt.configs) return opt.configs;
    Rng rng = Rng::derive(opt.seed, task == Task::kTile ? kTileTask : kLayoutTask,
                          static_cast<uint64_t>(index), "synth-config-count");
    return log_uniform_int(rng, opt.configs, opt.max_configs);
}

void SynthOptions::validate() const {
    SEGRANK_CHECK(min_nodes >= 2, "synth: nodes minimum must be >= 2, got ", min_nodes);
    SEGRANK_CHECK(max_nodes >= min_nodes, "synth: nodes range ", min_nodes, ":", max_nodes,
                  " has max < min");
    SEGRANK_CHECK(configs >= 2,
                  "synth: configs must be >= 2 (the default and at least one more), got ", configs);
    SEGRANK_CHECK(noise_sigma >= 0 && noise_sigma <= 5,
                  "synth: noise sigma must be in [0, 5], got ", noise_sigma);
    SEGRANK_CHECK(max_config_nodes >= 1, "synth: max_config_nodes must be >= 1, got ",
                  max_config_nodes);
    SEGRANK_CHECK(max_configs == 0 || max_configs >= configs, "synth: configs range ", configs, ":",
                  max_configs, " has max < min");
    SEGRANK_CHECK(config_node_fraction >= 0 && config_node_fraction <= 1,
                  "synth: config node fraction must be in [0, 1], got ", config_node_fraction);
    SEGRANK_CHECK(layout_choices >= 0 && layout_choices <= 1000,
                  "synth: layout_choices (--layout-choices) must be in [0, 1000], got ",
                  layout_choices);
}

SynthTile synth_tile(const SynthOptions& opt, int64_t index, bool keep_sources) {
    opt.validate();
    SynthTile out;
    Rng mrng = Rng::derive(opt.seed, kTileTask, static_cast<uint64_t>(index), "synth-module");
    const int64_t target = draw_nodes(mrng, opt);
    const std::string name = graph_name("tile", index);
    // A kernel whose best tile still overflows VMEM (e.g. a huge dot weight) would never compile
    // on a TPU: draw another kernel (same stream, so still deterministic).
    hlo::HloModule module;
    std::optional<hw::KernelModel> model;
    hlo::TileSizeConfig default_tile;
    for (int attempt = 0;; ++attempt) {
        SEGRANK_ASSERT(attempt < 64, "no tile kernel of ", name, " fits VMEM");
        model.reset();
        module = make_tile_module(mrng, static_cast<KernelKind>(mrng.uniform_int(4)), target, name);
        model.emplace(module, opt.hw);
        default_tile = model->best_tile();
        const auto base = model->evaluate(default_tile);
        if (base.invalid) continue;
        // A kernel whose runtime does not depend on the tile (every probed config costs the same)
        // carries no ranking signal: draw another one (probe stream separate, still deterministic).
        Rng probe = Rng::derive(opt.seed, kTileTask,
                                static_cast<uint64_t>(index) * 64 + static_cast<uint64_t>(attempt),
                                "synth-probe");
        bool varies = false;
        for (int p = 0; p < 16 && !varies; ++p) {
            const auto b = model->evaluate(random_tile_config(probe, *model));
            varies = std::isfinite(b.total_ns) &&
                     std::llround(b.total_ns) != std::llround(base.total_ns);
        }
        if (varies || attempt >= 32) break;
    }
    const hw::KernelModel& kernel = *model;
    Rng crng = Rng::derive(opt.seed, kTileTask, static_cast<uint64_t>(index), "synth-configs");
    Rng nrng = Rng::derive(opt.seed, kTileTask, static_cast<uint64_t>(index), "synth-noise");
    TileGraph& g = out.graph;
    hlo::featurize_structure(module, g, name);
    const int64_t configs = graph_configs(opt, Task::kTile, index);
    g.config_feat = Tensor(configs, kTileConfigDim);
    g.config_runtime.resize(static_cast<size_t>(configs));
    for (int64_t j = 0; j < configs; ++j) {
        const hlo::TileSizeConfig t = j == 0 ? default_tile : random_tile_config(crng, kernel);
        const double ns = kernel.evaluate(t).total_ns;
        SEGRANK_ASSERT(std::isfinite(ns), "tile config of ", name, " is invalid after resampling");
        g.config_runtime[static_cast<size_t>(j)] = noisy_runtime_ns(nrng, ns, opt.noise_sigma);
        const auto row = hlo::tile_config_features(t);
        std::copy(row.begin(), row.end(), g.config_feat.data() + j * kTileConfigDim);
        if (keep_sources) out.configs.push_back(t);
    }
    g.config_runtime_normalizers.assign(static_cast<size_t>(configs), g.config_runtime[0]);
    if (keep_sources) out.module = std::move(module);
    return out;
}

SynthLayout synth_layout(const SynthOptions& opt, int64_t index, bool keep_sources) {
    opt.validate();
    SynthLayout out;
    Rng mrng = Rng::derive(opt.seed, kLayoutTask, static_cast<uint64_t>(index), "synth-module");
    const int64_t target = draw_nodes(mrng, opt);
    const Family family = mrng.uniform() < 0.5 ? Family::kConvNet : Family::kTransformer;
    const std::string name = graph_name("layout", index);
    hlo::HloModule module = make_layout_module(mrng, family, target, name);

    LayoutGraph& g = out.graph;
    hlo::featurize_structure(module, g, name);
    g.node_splits = hlo::node_splits(module);
    g.node_config_ids = configurable_nodes(module);
    SEGRANK_ASSERT(!g.node_config_ids.empty(),
                   "synthetic layout module without configurable nodes");
    int64_t max_nc = opt.max_config_nodes;
    if (opt.config_node_fraction > 0)
        max_nc = std::min(max_nc,
                          std::max<int64_t>(1, std::llround(opt.config_node_fraction *
                                                            static_cast<double>(g.num_nodes()))));
    if (static_cast<int64_t>(g.node_config_ids.size()) > max_nc) {
        auto& ids = g.node_config_ids;  // partial Fisher-Yates, then back to increasing order
        for (size_t i = 0; i < static_cast<size_t>(max_nc); ++i)
            std::swap(ids[i], ids[i + mrng.uniform_int(ids.size() - i)]);
        ids.resize(static_cast<size_t>(max_nc));
        std::sort(ids.begin(), ids.end());
    }
    const hw::ModuleIndex idx(module);
    std::vector<std::vector<int64_t>> ranks;
    for (int64_t node : g.node_config_ids)
        ranks.push_back(layout_tensor_ranks(module, module.at(idx.ref_of_node(node))));

    std::optional<hw::LayoutModel> model;
    int64_t memo_evals = 0;  // node evaluations since the model (and its memo) was built
    constexpr int64_t kMemoBudget = int64_t{1} << 19;
    Rng crng = Rng::derive(opt.seed, kLayoutTask, static_cast<uint64_t>(index), "synth-configs");
    Rng nrng = Rng::derive(opt.seed, kLayoutTask, static_cast<uint64_t>(index), "synth-noise");
    const auto nc = static_cast<size_t>(g.num_config_nodes());
    const size_t row_size = nc * kLayoutConfigDim;
    const int64_t configs = graph_configs(opt, Task::kLayout, index);
    g.node_config_feat.assign(static_cast<size_t>(configs) * row_size, int8_t{-1});
    g.config_runtime.resize(static_cast<size_t>(configs));
    // layout_choices > 0: per node, N candidate layouts drawn once per graph from their own stream
    // (node-major: candidate i of node k at k * N + i); crng then only picks among them.
    const auto choices = static_cast<size_t>(opt.layout_choices);
    std::vector<int8_t> choice_rows(nc * choices * kLayoutConfigDim);
    std::vector<hlo::NodeLayoutConfig> choice_cfgs;  // kept only for keep_sources
    if (choices > 0) {
        Rng choice_rng = Rng::derive(opt.seed, kLayoutTask, static_cast<uint64_t>(index),
                                     "synth-layout-choices");
        if (keep_sources) choice_cfgs.reserve(nc * choices);
        for (size_t k = 0; k < nc; ++k)
            for (size_t i = 0; i < choices; ++i) {
                hlo::NodeLayoutConfig c = random_node_layout(choice_rng, ranks[k], opt.layout);
                const auto v = hlo::layout_config_values(c);
                std::copy(v.begin(), v.end(),
                          choice_rows.data() + (k * choices + i) * kLayoutConfigDim);
                if (keep_sources) choice_cfgs.push_back(std::move(c));
            }
    }
    for (int64_t j = 0; j < configs; ++j) {
        int8_t* row = g.node_config_feat.data() + static_cast<size_t>(j) * row_size;
        std::vector<hlo::NodeLayoutConfig> cfg(nc);
        for (size_t k = 0; k < nc; ++k) {
            if (j > 0 && choices > 0) {
                const size_t c = k * choices + static_cast<size_t>(crng.uniform_int(choices));
                const int8_t* v = choice_rows.data() + c * kLayoutConfigDim;
                std::copy(v, v + kLayoutConfigDim, row + k * kLayoutConfigDim);
                if (keep_sources) cfg[k] = choice_cfgs[c];
                continue;
            }
            if (j > 0)
                cfg[k] = random_node_layout(crng, ranks[k], opt.layout);
            else
                cfg[k].tensors.resize(ranks[k].size());  // compiler default: every tensor empty
            const auto v = hlo::layout_config_values(cfg[k]);
            std::copy(v.begin(), v.end(), row + k * kLayoutConfigDim);
        }
        if (!model || memo_evals > kMemoBudget) {
            model.reset();
            model.emplace(module, g.node_config_ids, opt.hw);
            memo_evals = 0;
        }
        memo_evals += static_cast<int64_t>(nc);
        const double ns = model->evaluate_ns(row);
        g.config_runtime[static_cast<size_t>(j)] = noisy_runtime_ns(nrng, ns, opt.noise_sigma);
        if (keep_sources) out.configs.push_back(std::move(cfg));
    }
    model.reset();
    if (keep_sources) out.module = std::move(module);
    return out;
}

hlo::ModuleTuning to_module_tuning(const SynthTile& s) {
    SEGRANK_CHECK(!s.configs.empty(),
                  "synth: to_module_tuning needs a graph made with keep_sources");
    hlo::ModuleTuning mt;
    mt.has_module = true;
    mt.module = s.module;
    for (size_t j = 0; j < s.configs.size(); ++j) {
        hlo::Run r;
        r.kind = Task::kTile;
        r.has_tile_size_config = true;
        r.tile = s.configs[j];
        r.has_profile = true;
        r.compute_time_ns = s.graph.config_runtime[j];
        r.is_default = j == 0;
        mt.runs.push_back(std::move(r));
    }
    return mt;
}

hlo::ModuleTuning to_module_tuning(const SynthLayout& s) {
    SEGRANK_CHECK(!s.configs.empty(),
                  "synth: to_module_tuning needs a graph made with keep_sources");
    hlo::ModuleTuning mt;
    mt.has_module = true;
    mt.module = s.module;
    mt.config_index_to_node.assign(s.graph.node_config_ids.begin(), s.graph.node_config_ids.end());
    for (size_t j = 0; j < s.configs.size(); ++j) {
        hlo::Run r;
        r.kind = Task::kLayout;
        r.layout = s.configs[j];
        r.has_profile = true;
        r.compute_time_ns = s.graph.config_runtime[j];
        r.is_default = j == 0;
        mt.runs.push_back(std::move(r));
    }
    return mt;
}

}  // namespace segrank::synth
