// Leaderboard ground truth: Truth and load_truth over npz collections and HDF5 stores.
#include <algorithm>
#include <cmath>
#include <memory>

#include "data/graph_source.h"
#include "data/graph_store.h"
#include "eval/leaderboard.h"
#include "gnn/core/check.h"
#include "util/user_input.h"

namespace segrank {

void Truth::add(const CollectionId& collection, const std::string& stem,
                std::vector<double> targets, const std::string& source) {
    const std::string id = submission_id(collection, stem);
    SEGRANK_CHECK(!by_id_.count(id), source, ": graph ID '", id,
                  "' appears twice in the truth (also in ", graphs_[by_id_.at(id)].source, ")");
    SEGRANK_CHECK(!targets.empty(), source, ": graph '", stem, "' has no configurations");
    for (size_t i = 0; i < targets.size(); ++i) {
        SEGRANK_CHECK(std::isfinite(targets[i]) && targets[i] > 0, source, ": graph '", stem,
                      "': target of config ", i, " is ", targets[i], ", expected a runtime > 0");
    }
    int64_t ci = collection_index(collection.name());
    if (ci < 0) {
        collections_.push_back(collection);
        ci = static_cast<int64_t>(collections_.size()) - 1;
    }
    TruthGraph g;
    g.id = id;
    g.collection = static_cast<size_t>(ci);
    g.targets = std::move(targets);
    g.source = source;
    by_id_.emplace(id, graphs_.size());
    graphs_.push_back(std::move(g));
}

const TruthGraph* Truth::find(const std::string& id) const {
    const auto it = by_id_.find(id);
    return it == by_id_.end() ? nullptr : &graphs_[it->second];
}

int64_t Truth::collection_index(const std::string& name) const {
    for (size_t i = 0; i < collections_.size(); ++i) {
        if (collections_[i].name() == name) return static_cast<int64_t>(i);
    }
    return -1;
}

int64_t Truth::collection_size(size_t i) const {
    return std::count_if(graphs_.begin(), graphs_.end(),
                         [&](const TruthGraph& g) { return g.collection == i; });
}

namespace {

bool all_zero(const std::vector<int64_t>& v) {
    return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 0; });
}

// Adds every graph of `src` to the truth, one graph in memory at a time.
void add_source(Truth& truth, const GraphSource& src, const std::string& where, bool is_store) {
    const CollectionId& id = src.collection();
    SEGRANK_CHECK(truth.collection_index(id.name()) < 0, where, ": collection ", id.name(),
                  " is given twice in --truth");
    for (int64_t i = 0; i < src.size(); ++i) {
        const GraphInfo info = src.info(i);
        const std::string gwhere = is_store || info.source.empty()
                                       ? str(where, ":/graphs/", info.name)
                                       : info.source.string();
        std::vector<int64_t> runtime, normalizer;
        if (id.task == Task::kTile) {
            TileGraph g = src.load_tile(i, ConfigRows::all());
            runtime = std::move(g.config_runtime);
            normalizer = std::move(g.config_runtime_normalizers);
        } else {
            runtime = std::move(src.load_layout(i, ConfigRows::all()).config_runtime);
        }
        SEGRANK_CHECK(
            !all_zero(runtime), gwhere, ": config_runtime is all 0 in ", id.full_name(),
            ": this split carries no runtimes (the public TpuGraphs test split is unlabelled) "
            "and cannot be scored; use a split with runtimes, e.g. --split valid");
        std::vector<double> targets(runtime.size());
        for (size_t k = 0; k < runtime.size(); ++k) {
            SEGRANK_CHECK(runtime[k] > 0, gwhere, ": config_runtime[", k, "] = ", runtime[k],
                          ", expected a runtime > 0 ns");
            // Same target as the trainer's evaluation (prepared_graph.cpp), bit for bit.
            targets[k] = id.task == Task::kTile
                             ? static_cast<double>(runtime[k]) /
                                   static_cast<double>(std::max<int64_t>(1, normalizer[k]))
                             : static_cast<double>(runtime[k]);
        }
        truth.add(id, info.name, std::move(targets), gwhere);
    }
}

bool split_matches(Split found, Split wanted) {
    return found == wanted || found == Split::kUnknown;
}

}  // namespace

Truth load_truth(const std::vector<std::filesystem::path>& inputs, Split split) {
    SEGRANK_CHECK(!inputs.empty(),
                  "--truth: no truth given (a collection root, folder or .h5 store)");
    Truth truth;
    std::vector<std::string> skipped;  // collections found with another split
    for (const auto& input : inputs) {
        SEGRANK_CHECK(!input.empty(),
                      "--truth: the path is empty (give an npz collection root, a folder of .h5 "
                      "stores or a .h5 store)");
        if (std::filesystem::is_regular_file(input)) {
            SEGRANK_CHECK(
                is_hdf5_file(input), input.string(),
                ": not an HDF5 graph store (give a .h5 store or an npz collection folder)");
            add_source(truth, GraphStore(input, LabelPolicy::kAllowTestZeros), input.string(),
                       true);
            continue;
        }
        if (!std::filesystem::is_directory(input)) {
            const char* kind = file_kind(input);  // exists, but neither a store nor a folder
            SEGRANK_CHECK(kind == nullptr, "--truth ", input.string(), ": is ", kind,
                          ", not a data folder (give an npz collection root, a folder of .h5 "
                          "stores or a .h5 store)");
            throw Error(str("--truth ", input.string(), ": no such file or directory"));
        }
        const std::vector<std::filesystem::path> stores = list_graph_stores(input);
        if (!stores.empty()) {  // a folder written by `segrank pack`
            for (const auto& s : stores) {
                GraphStore store(s, LabelPolicy::kAllowTestZeros);
                if (!split_matches(store.collection().split, split)) {
                    skipped.push_back(store.collection().full_name());
                    continue;
                }
                add_source(truth, store, s.string(), true);
            }
            continue;
        }
        for (auto& c : discover_collections(input)) {
            if (!split_matches(c.id.split, split)) {
                skipped.push_back(c.id.full_name());
                continue;
            }
            const std::string where = c.dir.string();
            add_source(truth, NpzGraphSource(std::move(c), LabelPolicy::kAllowTestZeros), where,
                       false);
        }
    }
    if (truth.collections().empty()) {
        std::string found;
        for (const auto& s : skipped) {
            if (!found.empty()) found += ", ";
            found += s;
        }
        throw Error(str("--truth: no collection of split '", to_string(split), "' found",
                        found.empty() ? std::string() : str(" (found ", found, ")"),
                        split == Split::kTest || skipped.empty()
                            ? std::string()
                            : "; choose one with --split (test splits have no runtimes)"));
    }
    return truth;
}

}  // namespace segrank
