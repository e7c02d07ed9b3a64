// Per-graph synthesis: module -> configs -> hwmodel labels -> featurized graph record.
#include "hwmodel/synth/synth.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <optional>

#include "data/hlo/featurizer.h"
#include "gnn/core/check.h"
#include "hwmodel/kernel_cost.h"
#include "hwmodel/loop_trips.h"
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
    SEGRANK_CHECK(min_nodes >= 2,
                  "synth options: nodes minimum (--nodes MIN:MAX) must be >= 2, got ", min_nodes);
    SEGRANK_CHECK(max_nodes >= min_nodes, "synth options: nodes range (--nodes) ", min_nodes, ":",
                  max_nodes, " has max < min");
    SEGRANK_CHECK(max_nodes <= kMaxNodes,
                  "synth options: nodes maximum (--nodes MIN:MAX) must be <= ", kMaxNodes, ", got ",
                  max_nodes);
    SEGRANK_CHECK(configs <= kMaxConfigs && max_configs <= kMaxConfigs,
                  "synth options: configs (--configs) must be <= ", kMaxConfigs, ", got ",
                  std::max(configs, max_configs));
    SEGRANK_CHECK(
        configs >= 2,
        "synth options: configs (--configs) must be >= 2 (the default and at least one more), got ",
        configs);
    SEGRANK_CHECK(noise_sigma >= 0 && noise_sigma <= 5,
                  "synth options: noise sigma (--noise) must be in [0, 5], got ", noise_sigma);
    SEGRANK_CHECK(max_config_nodes >= 1,
                  "synth options: max_config_nodes (--max-config-nodes) must be >= 1, got ",
                  max_config_nodes);
    SEGRANK_CHECK(max_configs == 0 || max_configs >= configs,
                  "synth options: configs range (--configs) ", configs, ":", max_configs,
                  " has max < min");
    SEGRANK_CHECK(
        config_node_fraction >= 0 && config_node_fraction <= 1,
        "synth options: config node fraction (--config-node-fraction) must be in [0, 1], got ",
        config_node_fraction);
    SEGRANK_CHECK(layout_choices >= 0 && layout_choices <= 1000,
                  "synth options: layout_choices (--layout-choices) must be in [0, 1000], got ",
                  layout_choices);
    SEGRANK_CHECK(
        stage_nodes == 0 || stage_nodes >= 1000,
        "synth options: stage_nodes (--stage-nodes) must be 0 (never stage) or >= 1000, got ",
        stage_nodes);
}

SynthTile synth_tile(const SynthOptions& opt, int64_t index, bool keep_sources) {
    opt.validate();
    SEGRANK_CHECK(hw::cost_family_kind(opt.cost_family) != hw::CostKind::kLayout,
                  "synth: cost family '", hw::cost_family_name(opt.cost_family),
                  "' is a layout cost; it cannot label tile graphs");
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
    const std::unique_ptr<hw::TileCostFamily> label =
        opt.cost_family == hw::CostFamily::kTpuV3
            ? nullptr
            : hw::make_tile_cost(opt.cost_family, kernel, opt.hw);
    Rng crng = Rng::derive(opt.seed, kTileTask, static_cast<uint64_t>(index), "synth-configs");
    Rng nrng = Rng::derive(opt.seed, kTileTask, static_cast<uint64_t>(index), "synth-noise");
    TileGraph& g = out.graph;
    hlo::featurize_structure(module, g, name);
    const int64_t configs = graph_configs(opt, Task::kTile, index);
    g.config_feat = Tensor(configs, kTileConfigDim);
    g.config_runtime.resize(static_cast<size_t>(configs));
    for (int64_t j = 0; j < configs; ++j) {
        const hlo::TileSizeConfig t = j == 0 ? default_tile : random_tile_config(crng, kernel);
        double ns = kernel.evaluate(t).total_ns;
        SEGRANK_ASSERT(std::isfinite(ns), "tile config of ", name, " is invalid after resampling");
        if (label) ns = label->evaluate_ns(t);
        SEGRANK_ASSERT(std::isfinite(ns) && ns > 0, "cost family ",
                       hw::cost_family_name(opt.cost_family), " gave ", ns, " ns for ", name);
        g.config_runtime[static_cast<size_t>(j)] = noisy_runtime_ns(nrng, ns, opt.noise_sigma);
        const auto row = hlo::tile_config_features(t);
        std::copy(row.begin(), row.end(), g.config_feat.data() + j * kTileConfigDim);
        if (keep_sources) out.configs.push_back(t);
    }
    g.config_runtime_normalizers.assign(static_cast<size_t>(configs), g.config_runtime[0]);
    if (keep_sources) out.module = std::move(module);
    return out;
}

namespace {

// Configurable nodes of a layout module: conv/dot/reshape nodes, at most max_nc of them (a seeded
// random subset from rng, back in increasing order).
std::vector<int64_t> pick_config_nodes(const hlo::HloModule& module, int64_t max_nc, Rng& rng) {
    std::vector<int64_t> ids = configurable_nodes(module);
    SEGRANK_ASSERT(!ids.empty(), "synthetic layout module without configurable nodes");
    if (static_cast<int64_t>(ids.size()) > max_nc) {  // partial Fisher-Yates, then sorted again
        for (size_t i = 0; i < static_cast<size_t>(max_nc); ++i)
            std::swap(ids[i], ids[i + rng.uniform_int(ids.size() - i)]);
        ids.resize(static_cast<size_t>(max_nc));
        std::sort(ids.begin(), ids.end());
    }
    return ids;
}

// Draws `configs` layout configurations of the configurable nodes `ids` of idx's module into rows
// ([configs, nc, 18], config 0 = all defaults) and returns each one's noise-free hwmodel runtime
// (ns). crng picks the layouts; with opt.layout_choices = N > 0, choice_rng first draws N
// candidates per node (node-major: candidate i of node k at k * N + i) and crng only picks among
// them. sources (optional) receives each config's NodeLayoutConfig objects.
std::vector<double> draw_layout_configs(const hw::ModuleIndex& idx, const std::vector<int64_t>& ids,
                                        const SynthOptions& opt, int64_t configs, Rng& crng,
                                        Rng& choice_rng, int8_t* rows,
                                        std::vector<std::vector<hlo::NodeLayoutConfig>>* sources) {
    const hlo::HloModule& module = idx.module();
    std::vector<std::vector<int64_t>> ranks;
    for (int64_t node : ids)
        ranks.push_back(layout_tensor_ranks(module, module.at(idx.ref_of_node(node))));
    std::unique_ptr<hw::LayoutCostFamily> model;
    int64_t memo_evals = 0;  // node evaluations since the model (and its memo) was built
    constexpr int64_t kMemoBudget = int64_t{1} << 19;
    const size_t nc = ids.size();
    const size_t row_size = nc * kLayoutConfigDim;
    const auto choices = static_cast<size_t>(opt.layout_choices);
    std::vector<int8_t> choice_rows(nc * choices * kLayoutConfigDim);
    std::vector<hlo::NodeLayoutConfig> choice_cfgs;  // kept only for sources
    if (choices > 0) {
        if (sources) choice_cfgs.reserve(nc * choices);
        for (size_t k = 0; k < nc; ++k)
            for (size_t i = 0; i < choices; ++i) {
                hlo::NodeLayoutConfig c = random_node_layout(choice_rng, ranks[k], opt.layout);
                const auto v = hlo::layout_config_values(c);
                std::copy(v.begin(), v.end(),
                          choice_rows.data() + (k * choices + i) * kLayoutConfigDim);
                if (sources) choice_cfgs.push_back(std::move(c));
            }
    }
    std::vector<double> ns(static_cast<size_t>(configs));
    for (int64_t j = 0; j < configs; ++j) {
        int8_t* row = rows + static_cast<size_t>(j) * row_size;
        std::vector<hlo::NodeLayoutConfig> cfg(nc);
        for (size_t k = 0; k < nc; ++k) {
            if (j > 0 && choices > 0) {
                const size_t c = k * choices + static_cast<size_t>(crng.uniform_int(choices));
                const int8_t* v = choice_rows.data() + c * kLayoutConfigDim;
                std::copy(v, v + kLayoutConfigDim, row + k * kLayoutConfigDim);
                if (sources) cfg[k] = choice_cfgs[c];
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
            model = hw::make_layout_cost(opt.cost_family, module, ids, opt.hw, opt.cost);
            memo_evals = 0;
        }
        memo_evals += static_cast<int64_t>(nc);
        ns[static_cast<size_t>(j)] = model->evaluate_ns(row);
        if (sources) sources->push_back(std::move(cfg));
    }
    return ns;
}

// The module draw of layout graph `index`: its node count and family (the first draws of its
// "synth-module" stream, which goes on to build the module of an unstaged graph).
struct LayoutDraw {
    Rng mrng;
    int64_t target = 0;
    Family family = Family::kConvNet;
};
LayoutDraw draw_layout(const SynthOptions& opt, int64_t index) {
    LayoutDraw d{Rng::derive(opt.seed, kLayoutTask, static_cast<uint64_t>(index), "synth-module")};
    d.target = draw_nodes(d.mrng, opt);
    d.family = d.mrng.uniform() < 0.5 ? Family::kConvNet : Family::kTransformer;
    return d;
}

int64_t stages_for(const SynthOptions& opt, int64_t target) {
    if (opt.stage_nodes <= 0 || target <= opt.stage_nodes) return 1;
    return (target + opt.stage_nodes - 1) / opt.stage_nodes;
}

// At most round(fraction x nodes) (at least 1) and max_config_nodes configurable nodes.
int64_t config_node_cap(const SynthOptions& opt, int64_t nodes) {
    int64_t max_nc = opt.max_config_nodes;
    if (opt.config_node_fraction > 0)
        max_nc = std::min(max_nc, std::max<int64_t>(1, std::llround(opt.config_node_fraction *
                                                                    static_cast<double>(nodes))));
    return max_nc;
}

}  // namespace

int64_t layout_stages(const SynthOptions& opt, int64_t index) {
    return stages_for(opt, draw_layout(opt, index).target);
}

SynthLayout synth_layout(const SynthOptions& opt, int64_t index, bool keep_sources) {
    opt.validate();
    SEGRANK_CHECK(hw::cost_family_kind(opt.cost_family) != hw::CostKind::kTile,
                  "synth: cost family '", hw::cost_family_name(opt.cost_family),
                  "' is a tile cost; it cannot label layout graphs");
    LayoutDraw d = draw_layout(opt, index);
    if (stages_for(opt, d.target) > 1) {
        SEGRANK_CHECK(!keep_sources, "synth: graph ", index, " of ", d.target,
                      " nodes is built in stages (> stage_nodes ", opt.stage_nodes,
                      "): its sources cannot be kept");
        // Gather the parts into one record (what npz output needs; stores take the parts).
        std::vector<GraphStructure> parts;
        SynthLayout out;
        out.graph = synth_layout_parts(opt, index,
                                       [&](GraphStructure& p) { parts.push_back(std::move(p)); });
        LayoutGraph& g = out.graph;
        const int64_t n = g.node_splits.back();
        g.node_feat = Tensor(n, kNodeFeatDim);
        g.node_opcode.reserve(static_cast<size_t>(n));
        int64_t at = 0;
        for (GraphStructure& p : parts) {
            std::copy(p.node_feat.data(), p.node_feat.data() + p.node_feat.size(),
                      g.node_feat.data() + at * kNodeFeatDim);
            at += p.num_nodes();
            g.node_opcode.insert(g.node_opcode.end(), p.node_opcode.begin(), p.node_opcode.end());
            g.edge_index.insert(g.edge_index.end(), p.edge_index.begin(), p.edge_index.end());
            p = GraphStructure{};
        }
        return out;
    }
    SynthLayout out;
    const std::string name = graph_name("layout", index);
    hlo::HloModule module = make_layout_module(d.mrng, d.family, d.target, name);

    LayoutGraph& g = out.graph;
    hlo::featurize_structure(module, g, name);
    g.node_splits = hlo::node_splits(module);
    g.node_loop_trips = hw::node_loop_trips(module);  // docs/files.md#loop-trip-counts
    g.node_config_ids = pick_config_nodes(module, config_node_cap(opt, g.num_nodes()), d.mrng);
    Rng crng = Rng::derive(opt.seed, kLayoutTask, static_cast<uint64_t>(index), "synth-configs");
    Rng nrng = Rng::derive(opt.seed, kLayoutTask, static_cast<uint64_t>(index), "synth-noise");
    Rng choice_rng =
        Rng::derive(opt.seed, kLayoutTask, static_cast<uint64_t>(index), "synth-layout-choices");
    const int64_t configs = graph_configs(opt, Task::kLayout, index);
    g.node_config_feat.assign(
        static_cast<size_t>(configs) * g.node_config_ids.size() * kLayoutConfigDim, int8_t{-1});
    const std::vector<double> ns = draw_layout_configs(
        hw::ModuleIndex(module), g.node_config_ids, opt, configs, crng, choice_rng,
        g.node_config_feat.data(), keep_sources ? &out.configs : nullptr);
    g.config_runtime.resize(static_cast<size_t>(configs));
    for (size_t j = 0; j < ns.size(); ++j)
        g.config_runtime[j] = noisy_runtime_ns(nrng, ns[j], opt.noise_sigma);
    if (keep_sources) out.module = std::move(module);
    return out;
}

LayoutGraph synth_layout_parts(const SynthOptions& opt, int64_t index,
                               const std::function<void(GraphStructure&)>& on_part) {
    opt.validate();
    SEGRANK_CHECK(hw::cost_family_kind(opt.cost_family) != hw::CostKind::kTile,
                  "synth: cost family '", hw::cost_family_name(opt.cost_family),
                  "' is a tile cost; it cannot label layout graphs");
    const LayoutDraw d = draw_layout(opt, index);
    const int64_t stages = stages_for(opt, d.target);
    const std::string name = graph_name("layout", index);
    const int64_t configs = graph_configs(opt, Task::kLayout, index);
    const int64_t max_nc = config_node_cap(opt, d.target);
    std::vector<double> ns(static_cast<size_t>(configs), 0.0);
    std::vector<std::vector<int8_t>> stage_rows;  // [stage][configs, nc_s, 18]
    LayoutGraph g;
    g.name = name;
    g.node_splits = {0};
    int64_t offset = 0, prev_root = -1;
    for (int64_t s = 0; s < stages; ++s) {
        const auto us = static_cast<uint64_t>(s);
        // Each stage: its own module stream and config streams (so stages are independent of
        // each other's sizes); the graph's node budget and configurable-node cap split evenly.
        Rng srng = Rng::derive(opt.seed, kLayoutTask, static_cast<uint64_t>(index),
                               str("synth-stage-module-", us));
        const int64_t target = d.target * (s + 1) / stages - d.target * s / stages;
        const int64_t quota = std::max<int64_t>(1, max_nc * (s + 1) / stages - max_nc * s / stages);
        const hlo::HloModule module = make_layout_module(srng, d.family, target, name);
        GraphStructure part;
        hlo::featurize_structure(module, part, name);
        const std::vector<int64_t> ids = pick_config_nodes(module, quota, srng);
        Rng crng = Rng::derive(opt.seed, kLayoutTask, static_cast<uint64_t>(index),
                               str("synth-stage-configs-", us));
        Rng choice_rng = Rng::derive(opt.seed, kLayoutTask, static_cast<uint64_t>(index),
                                     str("synth-stage-layout-choices-", us));
        std::vector<int8_t> rows(static_cast<size_t>(configs) * ids.size() * kLayoutConfigDim,
                                 int8_t{-1});
        const hw::ModuleIndex idx(module);
        const std::vector<double> stage_ns =
            draw_layout_configs(idx, ids, opt, configs, crng, choice_rng, rows.data(), nullptr);
        for (size_t j = 0; j < ns.size(); ++j)
            ns[j] += stage_ns[j];  // stages run one after another
        stage_rows.push_back(std::move(rows));
        for (int64_t id : ids) g.node_config_ids.push_back(offset + id);
        for (int64_t b : hlo::node_splits(module))
            if (b > 0) g.node_splits.push_back(offset + b);
        for (int64_t& v : part.edge_index) v += offset;
        // The stage reads the previous stage's result: its entry computation's first parameter
        // consumes the previous entry root.
        const size_t entry = idx.entry();
        const auto& ins = module.computations[entry].instructions;
        if (prev_root >= 0) {
            for (size_t i = 0; i < ins.size(); ++i)
                if (ins[i].opcode == "parameter") {
                    part.edge_index.push_back(offset + idx.node_of({entry, i}));
                    part.edge_index.push_back(prev_root);
                    break;
                }
        }
        prev_root = offset + idx.node_of(idx.ref(idx.root(entry).id));
        offset += part.num_nodes();
        on_part(part);
    }
    // node_config_feat [configs, nc, 18]: per config, the stages' rows one after another.
    const size_t nc = g.node_config_ids.size();
    g.node_config_feat.resize(static_cast<size_t>(configs) * nc * kLayoutConfigDim);
    int8_t* dst = g.node_config_feat.data();
    for (int64_t j = 0; j < configs; ++j)
        for (const auto& rows : stage_rows) {
            const size_t w = rows.size() / static_cast<size_t>(configs);
            const int8_t* src = rows.data() + static_cast<size_t>(j) * w;
            dst = std::copy(src, src + w, dst);
        }
    Rng nrng = Rng::derive(opt.seed, kLayoutTask, static_cast<uint64_t>(index), "synth-noise");
    g.config_runtime.resize(static_cast<size_t>(configs));
    for (size_t j = 0; j < ns.size(); ++j)
        g.config_runtime[j] = noisy_runtime_ns(nrng, ns[j], opt.noise_sigma);
    return g;
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
