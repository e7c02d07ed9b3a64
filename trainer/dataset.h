// Dataset: the graphs a run trains and evaluates on (docs/sampling.md#graph-ids,
// docs/files.md#collections-on-disk, docs/sampling.md#holdout): collection discovery over npz
// folders or HDF5 stores, the train/valid holdout (by graphs: valid split, k-fold or leave-one-out;
// by configs: a fraction of each graph's configs), and graph ids that decide ownership
// (docs/sampling.md#ownership). Loading and preparation of one graph lives in gst/prepared_graph.h.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "data/graph_entry.h"
#include "data/graph_source.h"
#include "trainer/config.h"

namespace segrank {

/// The training and evaluation graph lists of a run. Sources are opened once and shared.
class Dataset {
public:
    /// Opens the collections of `data` (data.root, data.store, data.collections) and builds the
    /// holdout. `seed` fixes the config holdout permutation. Throws segrank::Error naming the root
    /// when nothing matches, when a requested collection is missing, when a split has no graphs,
    /// or when the holdout settings do not fit the number of graphs.
    Dataset(const cfg::DataSection& data, uint64_t seed);

    /// A dataset with one role only: every graph of `split` in the selected collections, all
    /// configs (for `segrank evaluate` / `predict`). Same errors.
    static Dataset for_split(const cfg::DataSection& data, const std::string& split);

    const std::vector<GraphEntry>& train() const { return train_; }
    const std::vector<GraphEntry>& eval() const { return eval_; }
    /// One-line human description (collections, counts, holdout).
    std::string describe() const;
    /// Training graphs with fewer than 2 usable configs ("name (source file)"): a ranking loss has
    /// no pair in them and an mse loss standardizes their one target to 0, so they add nothing.
    const std::vector<std::string>& single_config_graphs() const { return single_config_; }

private:
    Dataset() = default;
    void open_sources(const cfg::DataSection& data);
    std::vector<GraphEntry> graphs_of_split(const std::string& split, int max_graphs) const;
    /// "the splits found there: train, valid" (sorted, distinct, over the selected collections),
    /// or "no split was found there", for the "no graphs in split" messages.
    std::string splits_found() const;

    std::vector<std::unique_ptr<GraphSource>> sources_;
    std::vector<GraphEntry> train_;
    std::vector<GraphEntry> eval_;
    std::string description_;
    std::vector<std::string> single_config_;
};

/// For a data.root read from a stored config (a checkpoint's, a run directory's config.toml):
/// throws segrank::Error unless `data.root` exists, naming where the config came from and what the
/// command can do: "<origin>: data.root '<root>' (from <from>) does not exist (the data moved?
/// <remedy>)". Does nothing when data.ingest is set (ingesting creates the root).
void check_stored_data_root(const cfg::DataSection& data, const std::string& origin,
                            const std::string& from, const std::string& remedy);

/// Throws segrank::Error unless `data.root` exists, with the message the run's data listing
/// gives: "data.root: '<root>' does not exist (expected a TpuGraphs npz folder or a folder of .h5
/// stores)". Used by the run and by `segrank train --check`; the caller skips it when data.ingest
/// creates the root.
void check_data_root_exists(const cfg::DataSection& data);

/// check_stored_data_root for `segrank train --resume run_dir` (data = its config.toml's data
/// section): a resume cannot change data.root, so the error says to move the data back or link
/// the old path to it.
void check_resume_data_root(const cfg::DataSection& data, const std::filesystem::path& run_dir);

}  // namespace segrank
