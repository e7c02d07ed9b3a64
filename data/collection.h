// TpuGraphs collections on disk (docs/files.md#collections-on-disk, docs/files.md#real-data):
// discovery of npz/tile/xla/{split}/ and npz/layout/{xla,nlp}/{default,random}/{split}/ folders,
// and the Kaggle collection names.
#pragma once
#include <filesystem>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/graph.h"
#include "gnn/core/enum_names.h"

namespace segrank {

enum class Source { kXla, kNlp };
/// Layout search strategy; tile collections have none.
enum class Search { kNone, kDefault, kRandom };
/// kUnknown: a loose folder of npz files whose split could not be inferred from its path.
enum class Split { kTrain, kValid, kTest, kUnknown };

/// How collections are stored: TpuGraphs npz folders, or HDF5 graph stores (`segrank pack`).
enum class StoreFormat { kNpz, kHdf5 };
/// Names: "npz", "hdf5" (config `data.store`, `segrank synth --format`).
std::span<const EnumName<StoreFormat>> enum_names(StoreFormat);
/// Parses "npz" | "hdf5"; throws segrank::Error listing both.
StoreFormat parse_store_format(std::string_view s);
std::string_view to_string(StoreFormat f);

const char* to_string(Source s);  ///< "xla" | "nlp"
const char* to_string(Search s);  ///< "" | "default" | "random"
const char* to_string(Split s);   ///< "train" | "valid" | "test" | "unknown"
/// Parsers (R10): throw segrank::Error listing the valid names.
Source parse_source(std::string_view s);
Search parse_search(std::string_view s);
Split parse_split(std::string_view s);

/// Identity of one collection split, e.g. {layout, nlp, random, valid}.
struct CollectionId {
    Task task = Task::kTile;
    Source source = Source::kXla;
    Search search = Search::kNone;
    Split split = Split::kUnknown;

    /// Kaggle naming (submission ID prefix): "tile:xla", "layout:xla:default", ...
    std::string name() const;
    /// name() + ":" + split, e.g. "tile:xla:test".
    std::string full_name() const;
    /// File-system friendly form used for store names: "tile_xla_test", "layout_nlp_random_valid".
    std::string file_stem() const;
    /// Inverse of name() (+ optional ":split"). Throws on malformed names.
    static CollectionId parse(std::string_view name_or_full_name);
    bool operator==(const CollectionId&) const = default;
};

/// Which label policy loading a split needs: zeros allowed for test (and unknown) splits.
LabelPolicy label_policy(Split s);

/// One collection split: its identity, folder and npz files (sorted by file name).
struct Collection {
    CollectionId id;
    std::filesystem::path dir;
    std::vector<std::filesystem::path> files;
};

/// The rule of a data folder: one store (or npz folder) per collection split, so no graph is read
/// twice. Feed it every store or folder found; add() throws segrank::Error naming both when a
/// collection split comes a second time.
class OneSourcePerSplit {
public:
    /// Records that `where` (a store file or npz folder) holds collection split `id`. Throws
    /// "<where>: collection <id.full_name()> is also in <earlier where>; ..." on a repeat.
    void add(const CollectionId& id, const std::string& where);

private:
    std::vector<std::pair<std::string, std::string>> seen_;  // full name, where
};

/// Task of an npz file from its keys: config_feat => tile, node_config_feat => layout.
/// Throws naming the file when neither (or both) key is present.
Task infer_task(const std::filesystem::path& npz_file);

/// Finds the collections under `root`, which may be the TpuGraphs `npz/` folder, its parent, or a
/// folder holding npz files of one task directly (task from the keys of its first file; source,
/// search and split from the folder names, e.g. ".../tile_xla_test" -> tile:xla, test).
/// Only folders with at least one .npz file are listed; order: tile, layout xla, layout nlp,
/// default before random, train/valid/test. Throws segrank::Error when nothing is found.
std::vector<Collection> discover_collections(const std::filesystem::path& root);

/// For a folder listing: throws segrank::Error naming the entry when `e` (an entry whose name
/// ends in ".<what>") is not a readable regular file: a symbolic link loop ("is a symbolic link
/// loop (ELOOP: ...)"), a broken symbolic link (with its target), a directory or another kind of
/// file. Entries are never skipped silently.
void check_listed_file(const std::filesystem::directory_entry& e, std::string_view what);

/// The first character of graph name `name` that a name may not hold, or nullopt: a ',' or a
/// control character (a line break). A graph's name is a field of the submission and scores CSVs
/// (docs/files.md#submission-csv) and a line of tables, so npz file stems and the graph names of
/// HDF5 stores are checked with it when listed, not when predict writes its CSV.
std::optional<char> bad_graph_name_char(std::string_view name);

/// The reason text that follows "contains '<c>'" in an error about a bad graph name.
inline constexpr const char* kBadGraphNameReason =
    "expected no ',' and no control character or line break: the name is a field of the "
    "submission CSV ID,TopConfigs";

}  // namespace segrank
