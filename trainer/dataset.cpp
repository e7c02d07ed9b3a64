// Dataset: source discovery, collection filtering and the holdout.
#include "trainer/dataset.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include "data/collection.h"
#include "data/graph_store.h"
#include "gnn/core/check.h"
#include "sampling/dedupe.h"
#include "sampling/dedupe_stream.h"
#include "sampling/holdout.h"

namespace segrank {

namespace {

std::string join(const std::vector<std::string>& v) {
    std::string s;
    for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + v[i];
    return s;
}

}  // namespace

// Config holdout of one graph: identical config rows move together (no runtime leaks into
// training).
static void split_graph_configs(const GraphEntry& e, double fraction, uint64_t seed,
                                std::vector<int64_t>& train, std::vector<int64_t>& held_out) {
    // Hashed chunk by chunk from the source: memory O(chunk + c), not O(c x row bytes).
    const std::vector<int64_t> groups =
        config_groups_streamed(*e.source, e.index, e.info.num_configs);
    ConfigSplit split;
    try {
        split = holdout_configs(e.info.num_configs, groups, fraction, seed, e.id);
    } catch (const Error& err) {  // name the graph's file, not only its id
        throw Error(
            str(e.source->where(e.index), " (", e.name, "): ", err.what(),
                " (data.holdout = \"configs\"; use data.holdout = \"graphs\" or drop this graph)"));
    }
    train = std::move(split.train);
    held_out = std::move(split.heldout);
}

namespace {

// Graph holdout by split: a graph (same task, source, search and name) in both the train and the
// valid split would be scored on what it was trained on.
void refuse_shared_graphs(const std::vector<GraphEntry>& train,
                          const std::vector<GraphEntry>& valid, const cfg::DataSection& data) {
    auto key = [](const GraphEntry& e) {
        return str(to_string(e.collection.task), ":", to_string(e.collection.source), ":",
                   to_string(e.collection.search), ":", e.name);
    };
    std::map<std::string, const GraphEntry*> in_train;
    for (const auto& e : train) in_train.emplace(key(e), &e);
    for (const auto& v : valid) {
        const auto it = in_train.find(key(v));
        if (it == in_train.end()) continue;
        const GraphEntry& t = *it->second;
        throw Error(str("data.valid_split = \"", data.valid_split, "\": graph '", v.name,
                        "' is in the training split too (", t.source->where(t.index), " and ",
                        v.source->where(v.index),
                        "), so validation would score what the model was trained on; remove one "
                        "copy, or hold out configs (data.holdout = \"configs\")"));
    }
}

// The npz collections under data.root; a folder of HDF5 stores (or a store) given to a run that
// reads npz is an error that says so and how to point it at the right data.
std::vector<Collection> npz_collections(const std::filesystem::path& root) {
    try {
        return discover_collections(root);
    } catch (const Error&) {
        std::error_code ec;
        std::vector<std::filesystem::path> stores;
        if (std::filesystem::is_regular_file(root, ec) && is_hdf5_file(root)) {
            stores.push_back(root);
        } else if (std::filesystem::is_directory(root, ec)) {
            try {
                stores = list_graph_stores(root);
            } catch (const std::exception&) {
            }
        }
        if (stores.empty()) throw;
        throw Error(str(
            "data.root: '", root.string(), "' holds ", stores.size(), " HDF5 graph store(s) (",
            stores.front().filename().string(), stores.size() > 1 ? ", ..." : "",
            ") and no npz collections, but data.store = \"npz\" (this run reads npz files): give "
            "the npz collection folder the stores were packed from (evaluate / predict: --data "
            "DIR), or train a new run with data.store = \"hdf5\" to read the stores"));
    }
}

}  // namespace

void check_stored_data_root(const cfg::DataSection& data, const std::string& origin,
                            const std::string& from, const std::string& remedy) {
    if (!data.ingest.empty()) return;
    std::error_code ec;
    SEGRANK_CHECK(std::filesystem::exists(data.root, ec), origin, ": data.root '", data.root,
                  "' (from ", from, ") does not exist (the data moved? ", remedy, ")");
}

void check_resume_data_root(const cfg::DataSection& data, const std::filesystem::path& run_dir) {
    check_stored_data_root(data, "--resume " + run_dir.string(), (run_dir / "config.toml").string(),
                           "a resumed run reads its data where it was trained: move the data "
                           "back there or link that path to it (ln -s NEW_DIR OLD_PATH)");
}

void check_data_root_exists(const cfg::DataSection& data) {
    std::error_code ec;
    SEGRANK_CHECK(std::filesystem::exists(data.root, ec), "data.root: '", data.root,
                  "' does not exist (expected a TpuGraphs npz folder or a folder of .h5 stores)");
}

void Dataset::open_sources(const cfg::DataSection& data) {
    const std::filesystem::path root = data.root;
    check_data_root_exists(data);
    std::set<std::string> wanted(data.collections.begin(), data.collections.end());
    std::set<std::string> seen;
    auto keep = [&](const CollectionId& id) {
        seen.insert(id.name());
        return wanted.empty() || wanted.count(id.name()) > 0;
    };
    if (data.store == StoreFormat::kHdf5) {
        std::vector<std::filesystem::path> files;
        if (std::filesystem::is_regular_file(root)) {
            files.push_back(root);
        } else {
            for (const auto& e : std::filesystem::directory_iterator(root)) {
                if (e.path().extension() != ".h5") continue;
                check_listed_file(e, "h5");
                files.push_back(e.path());
            }
        }
        std::sort(files.begin(), files.end());
        if (files.empty()) {
            bool npz = false;
            try {
                npz = !discover_collections(root).empty();
            } catch (const Error&) {
            }
            SEGRANK_CHECK(!npz, "data.root: '", root.string(),
                          "' holds npz collections and no .h5 stores, but data.store = \"hdf5\" "
                          "(this run reads HDF5 graph stores): pack them with `segrank pack ",
                          root.string(),
                          " --out DIR` and give DIR (evaluate / predict: --data "
                          "DIR), or train a new run with data.store = \"npz\"");
            throw Error(str("data.root: no .h5 stores in '", root.string(),
                            "' (data.store = \"hdf5\"; create them with `segrank pack`)"));
        }
        OneSourcePerSplit one;
        for (const auto& f : files) {
            // Runtimes must be > 0 in labelled (train / valid) splits, may be 0 in test splits.
            auto store = std::make_unique<GraphStore>(f);
            one.add(store->collection(), f.string());
            if (keep(store->collection())) sources_.push_back(std::move(store));
        }
    } else {
        OneSourcePerSplit one;
        for (auto& c : npz_collections(root)) {
            one.add(c.id, c.dir.string());
            if (!keep(c.id)) continue;
            sources_.push_back(std::make_unique<NpzGraphSource>(std::move(c)));
        }
    }
    for (const auto& w : wanted) {
        std::vector<std::string> found(seen.begin(), seen.end());
        SEGRANK_CHECK(seen.count(w) > 0, "data.collections: collection '", w, "' not found under '",
                      root.string(), "' (found: ", found.empty() ? "none" : join(found), ")");
    }
    SEGRANK_CHECK(!sources_.empty(), "data.root: no collections under '", root.string(), "'");
}

std::vector<GraphEntry> Dataset::graphs_of_split(const std::string& split, int max_graphs) const {
    const Split want = parse_split(split);
    std::vector<GraphEntry> out;
    for (const auto& src : sources_) {
        if (src->collection().split != want) continue;
        int64_t n = src->size();
        if (max_graphs > 0) n = std::min<int64_t>(n, max_graphs);
        for (int64_t i = 0; i < n; ++i) {
            GraphEntry e;
            e.source = src.get();
            e.index = i;
            e.collection = src->collection();
            e.info = src->info(i);
            e.name = e.info.name;
            out.push_back(std::move(e));
        }
    }
    // Ids follow (collection, name) order so every rank agrees regardless of discovery order.
    std::stable_sort(out.begin(), out.end(), [](const GraphEntry& a, const GraphEntry& b) {
        if (a.collection.name() != b.collection.name())
            return a.collection.name() < b.collection.name();
        return a.name < b.name;
    });
    for (size_t i = 0; i < out.size(); ++i) out[i].id = static_cast<int64_t>(i);
    return out;
}

std::string Dataset::splits_found() const {
    std::set<std::string> found;
    for (const auto& src : sources_)
        if (src->size() > 0) found.insert(to_string(src->collection().split));
    if (found.empty()) return "no split was found there";
    return str("the splits found there: ", join({found.begin(), found.end()}));
}

Dataset::Dataset(const cfg::DataSection& data, uint64_t seed) {
    open_sources(data);
    auto train = graphs_of_split(data.train_split, data.max_graphs);
    SEGRANK_CHECK(!train.empty(), "data.train_split: no graphs in split '", data.train_split,
                  "' under '", data.root, "' (", splits_found(), ")");
    std::string how;
    if (data.holdout == cfg::Holdout::kConfigs) {
        // Every train graph is in both roles; configs are split per graph.
        eval_ = train;
        for (size_t i = 0; i < train.size(); ++i) {
            split_graph_configs(train[i], data.holdout_fraction, seed, train[i].configs,
                                eval_[i].configs);
        }
        train_ = std::move(train);
        how =
            str("configs (", data.holdout_fraction * 100.0, "% of each graph's configs held out)");
    } else if (data.holdout_folds == 0) {
        train_ = std::move(train);
        eval_ = graphs_of_split(data.valid_split, data.max_graphs);
        SEGRANK_CHECK(
            !eval_.empty(), "data.valid_split: no graphs in split '", data.valid_split, "' under '",
            data.root, "' (", splits_found(),
            "; use data.holdout = \"configs\" or data.holdout_folds for data sets without one)");
        refuse_shared_graphs(train_, eval_, data);
        how = str("graphs (split '", data.valid_split, "')");
    } else {
        const auto n = static_cast<int64_t>(train.size());
        const bool loo = data.holdout_folds < 0;
        const int64_t k = loo ? n : data.holdout_folds;
        SEGRANK_CHECK(n >= 2, "data.holdout_folds: needs at least 2 training graphs, found ", n);
        SEGRANK_CHECK(k <= n, "data.holdout_folds = ", k, ": more folds than the ", n,
                      " training graphs");
        SEGRANK_CHECK(data.holdout_fold >= 0 && data.holdout_fold < k,
                      "data.holdout_fold: expected 0..", k - 1, ", got ", data.holdout_fold);
        std::vector<int64_t> ids;
        for (const auto& g : train) ids.push_back(g.id);
        const GraphSplit split = holdout_graphs_kfold(ids, k, data.holdout_fold, seed);
        std::vector<GraphEntry> tr, ev;
        for (auto& g : train)
            (std::binary_search(split.heldout.begin(), split.heldout.end(), g.id) ? ev : tr)
                .push_back(std::move(g));
        for (size_t i = 0; i < tr.size(); ++i) tr[i].id = static_cast<int64_t>(i);
        for (size_t i = 0; i < ev.size(); ++i) ev[i].id = static_cast<int64_t>(i);
        train_ = std::move(tr);
        eval_ = std::move(ev);
        how = loo ? str("leave-one-out graph ", data.holdout_fold)
                  : str("fold ", data.holdout_fold, " of ", k);
    }
    for (const auto& g : train_) {
        const int64_t usable =
            g.configs.empty() ? g.info.num_configs : static_cast<int64_t>(g.configs.size());
        if (usable < 2) single_config_.push_back(str(g.name, " (", g.info.source.string(), ")"));
    }
    std::set<std::string> names;
    for (const auto& s : sources_) names.insert(s->collection().full_name());
    if (!train_.empty() && single_config_.size() == train_.size()) {
        // Every step's loss would be 0 and no parameter would move: refuse before training.
        std::set<std::string> train_collections;
        for (const auto& g : train_) train_collections.insert(g.collection.full_name());
        throw Error(str(
            "data: no training graph has 2 or more configs to rank: the ", train_.size(),
            " training graph(s) of split '", data.train_split, "' in ",
            join({train_collections.begin(), train_collections.end()}), " (holdout by ", how,
            ") have at most 1 each, e.g. ", single_config_.front(),
            "; a ranking loss has no pair and an mse loss no spread in them, so every step's loss "
            "would be 0",
            data.holdout == cfg::Holdout::kConfigs
                ? " (lower data.holdout_fraction to keep 2 or more training configs per graph)"
                : " (add graphs with 2 or more configs to the training split)"));
    }
    description_ =
        str(train_.size(), " training graphs, ", eval_.size(), " evaluation graphs; holdout by ",
            how, "; collections: ", join({names.begin(), names.end()}));
}

Dataset Dataset::for_split(const cfg::DataSection& data, const std::string& split) {
    Dataset d;
    d.open_sources(data);
    d.eval_ = d.graphs_of_split(split, data.max_graphs);
    SEGRANK_CHECK(!d.eval_.empty(), "no graphs in split '", split, "' under '", data.root, "'");
    d.description_ = str(d.eval_.size(), " graphs of split '", split, "'");
    return d;
}

std::string Dataset::describe() const { return description_; }

}  // namespace segrank
