// check_one_task and the collection listing of `segrank train --check` (config_task.h).
#include "trainer/config_task.h"

#include <algorithm>
#include <filesystem>
#include <set>
#include <string>

#include "data/graph_store.h"
#include "gnn/core/check.h"

namespace segrank {

std::optional<std::vector<CollectionId>> training_collections(const RunConfig& cfg) {
    namespace fs = std::filesystem;
    const fs::path root = cfg.data.root;
    std::error_code ec;
    if (!cfg.data.ingest.empty() || !fs::exists(root, ec)) return std::nullopt;
    const std::set<std::string> wanted(cfg.data.collections.begin(), cfg.data.collections.end());
    const Split split = parse_split(cfg.data.train_split);
    std::vector<CollectionId> out;
    std::set<std::string> seen;  // every collection under root, as the run's listing names them
    const auto add = [&](const CollectionId& id) {
        seen.insert(id.name());
        if (id.split == split && (wanted.empty() || wanted.count(id.name()))) out.push_back(id);
    };
    if (cfg.data.store == StoreFormat::kHdf5) {
        std::vector<fs::path> files;
        if (fs::is_regular_file(root, ec))
            files.push_back(root);
        else
            files = list_graph_stores(root);
        for (const auto& f : files) {
            const GraphStore store(f);  // attributes and graph names only
            if (store.size() > 0)
                add(store.collection());
            else
                seen.insert(store.collection().name());
        }
    } else {
        for (const Collection& c : discover_collections(root)) add(c.id);
    }
    // The run refuses a named collection that root does not hold (Dataset::open_sources), with
    // the same message.
    for (const std::string& w : wanted) {
        if (seen.count(w)) continue;
        std::string found;
        for (const std::string& name : seen) found += (found.empty() ? "" : ", ") + name;
        throw Error(str("data.collections: collection '", w, "' not found under '", root.string(),
                        "' (found: ", found.empty() ? "none" : found, ")"));
    }
    std::stable_sort(out.begin(), out.end(), [](const CollectionId& a, const CollectionId& b) {
        return a.name() < b.name();
    });
    return out;
}

Task check_one_task(const RunConfig& cfg, const std::vector<CollectionId>& train) {
    SEGRANK_ASSERT(!train.empty());
    const Task task = train.front().task;
    for (const auto& c : train)
        SEGRANK_CHECK(c.task == task, "data.collections: one run trains one task; found both '",
                      train.front().name(), "' and '", c.name(),
                      "' (select collections of one task)");
    // config_check.cpp rejects "late" with layout collections named in the config (with file:line);
    // an unrestricted data.collections only reveals the task here, so point at the key ourselves.
    const std::string join_at = key_location(cfg, "model.config_join");
    SEGRANK_CHECK(cfg.model.config_join != ConfigJoin::kLate || task == Task::kTile, join_at,
                  join_at.empty() ? "" : ": ",
                  "model.config_join: \"late\" applies to tile collections only, but the training "
                  "graphs are ",
                  train.front().name(),
                  " (set model.config_join = \"early\" or select tile collections)");
    const std::string cost_at = key_location(cfg, "model.tile_cost_features");
    SEGRANK_CHECK(
        !cfg.model.tile_cost_features || task == Task::kTile, cost_at, cost_at.empty() ? "" : ": ",
        "model.tile_cost_features: true applies to tile collections only, but the "
        "training graphs are ",
        train.front().name(), " (set model.tile_cost_features = false or select tile collections)");
    return task;
}

}  // namespace segrank
