// Tile and layout collections (docs/files.md#tile-config-features,
// docs/files.md#layout-config-features; upstream tuning_data_iterator.cc): run filtering, config
// features, runtimes and normalizers for one ModuleTuningData.
#include <algorithm>

#include "data/hlo/featurizer.h"
#include "gnn/core/check.h"

namespace segrank::hlo {

std::optional<Task> detect_task(const ModuleTuning& mt) {
    if (mt.runs.empty()) return std::nullopt;
    return mt.runs.front().kind;
}

Featurized<TileGraph> featurize_tile(const ModuleTuning& mt, const std::string& where_in) {
    Featurized<TileGraph> res;
    const std::string where = str(where_in, " (module '", mt.module.name, "')");
    if (!mt.has_module) {
        res.skip_reason = "no module";
        return res;
    }
    if (mt.runs.size() <= 1) {
        res.skip_reason = str("only ", mt.runs.size(), " run(s); the tile collection needs > 1");
        return res;
    }
    for (size_t r = 0; r < mt.runs.size(); ++r) {
        if (mt.runs[r].kind != Task::kTile || !mt.runs[r].has_tile_size_config) {
            res.skip_reason = str("runs[", r, "] has no op_config.tile_size_config");
            return res;
        }
    }
    std::vector<const Run*> kept;
    for (const Run& r : mt.runs)
        if (!r.error && r.compute_time_ns > 1) kept.push_back(&r);
    SEGRANK_CHECK(!kept.empty(), where, ": no run is kept (all ", mt.runs.size(),
                  " runs have error = true or compute_time_ns <= 1)");
    auto def = std::find_if(kept.begin(), kept.end(), [](const Run* r) { return r->is_default; });
    SEGRANK_CHECK(def != kept.end(), where,
                  ": no kept run has is_default = true, so the runtime "
                  "normalizer (docs/files.md#tile-config-features) is undefined");
    const int64_t normalizer = (*def)->compute_time_ns;

    TileGraph g;
    featurize_structure(mt.module, g, where);
    const auto c = static_cast<int64_t>(kept.size());
    g.config_feat = Tensor(c, kTileConfigDim);
    for (int64_t j = 0; j < c; ++j) {
        const auto row = tile_config_features(kept[static_cast<size_t>(j)]->tile);
        std::copy(row.begin(), row.end(), g.config_feat.data() + j * kTileConfigDim);
        g.config_runtime.push_back(kept[static_cast<size_t>(j)]->compute_time_ns);
    }
    g.config_runtime_normalizers.assign(static_cast<size_t>(c), normalizer);
    res.graph = std::move(g);
    return res;
}

Featurized<LayoutGraph> featurize_layout(const ModuleTuning& mt, const std::string& where_in) {
    Featurized<LayoutGraph> res;
    const std::string where = str(where_in, " (module '", mt.module.name, "')");
    if (!mt.has_module) {
        res.skip_reason = "no module";
        return res;
    }
    const size_t nc = mt.config_index_to_node.size();
    SEGRANK_CHECK(nc > 0, where,
                  ": config_index_to_node is empty (a layout module needs at least "
                  "one configurable node)");
    const auto n = static_cast<uint64_t>(mt.module.num_instructions());
    for (size_t k = 0; k < nc; ++k)
        SEGRANK_CHECK(mt.config_index_to_node[k] < n, where, ": config_index_to_node[", k,
                      "] = ", mt.config_index_to_node[k], " is out of range (module has ", n,
                      " nodes)");

    std::vector<size_t> kept;
    bool any_default = false;
    for (size_t r = 0; r < mt.runs.size(); ++r) {
        const Run& run = mt.runs[r];
        if (run.kind != Task::kLayout || run.error || !run.has_profile) continue;
        SEGRANK_CHECK(run.compute_time_ns > 0, where, ": runs[", r,
                      "] is kept (no error, profile "
                      "present) but has compute_time_ns = ",
                      run.compute_time_ns, " (expected > 0)");
        SEGRANK_CHECK(run.layout.size() == nc, where, ": runs[", r, "] has ", run.layout.size(),
                      " layout nodes, expected ", nc, " (one per config_index_to_node entry)");
        any_default |= run.is_default;
        kept.push_back(r);
    }
    if (!any_default) {
        res.skip_reason = str("none of the ", kept.size(), " kept runs is a default run");
        return res;
    }

    LayoutGraph g;
    featurize_structure(mt.module, g, where);
    g.node_config_ids.assign(mt.config_index_to_node.begin(), mt.config_index_to_node.end());
    g.node_splits = node_splits(mt.module);
    g.node_config_feat.reserve(kept.size() * nc * kLayoutConfigDim);
    for (size_t r : kept) {
        const Run& run = mt.runs[r];
        for (size_t k = 0; k < nc; ++k) {
            std::array<int8_t, kLayoutConfigDim> v;
            try {
                v = layout_config_values(run.layout[k]);
            } catch (const Error& e) {
                throw Error(str(where, ": runs[", r, "].module_config.layout_config.nodes[", k,
                                "]: ", e.what()));
            }
            g.node_config_feat.insert(g.node_config_feat.end(), v.begin(), v.end());
        }
        g.config_runtime.push_back(run.compute_time_ns);
    }
    res.graph = std::move(g);
    return res;
}

}  // namespace segrank::hlo
