// The files of a `segrank tune` directory (docs/tune.md): tune.json (the graph it measures),
// measurements.jsonl (one line per measurement) and best.json. Internal to cli/tune_rounds.cpp.
#pragma once
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "cli/tune_rounds.h"
#include "util/atomic_file.h"

namespace segrank::cli {

// Identity of the graph a DIR measures, compared on --resume.
/// Creates `out` and its missing parents (removed again by the returned guard unless kept). Throws
/// segrank::Error "--out DIR: cannot create the directory (...)".
std::unique_ptr<CreatedDirectories> create_out_dir(const std::filesystem::path& out);

/// The graph `g` a tune directory measures, as tune.json's "graph" records it: name, task, sizes,
/// an FNV-1a hash of its runtimes and "content", an XXH3-64 digest over every array of the graph
/// file's record (features, edges, config rows, runtimes), so a --resume on a file changed since
/// (another config row under the same name and sizes) is refused.
Json graph_identity(const Graph& g, const tune::TuneGraph& record);

// A graph holding r's structure and the configs `cs` (non-empty) as its rows, runtimes unknown: the
// candidates of --candidates search, scored and refit on though no file holds them.
Graph graph_of_configs(const tune::TuneGraph& r, const std::vector<tune::Config>& cs);

// A config's rows as JSON: tile [24] numbers, layout [nc][18] integers.
Json rows_json(const tune::Config& c);

// One line of DIR/measurements.jsonl.
struct Record {
    int64_t round = 0;
    tune::Config config;
    std::optional<double> runtime_ns;
    std::string error;      ///< why it failed ("error" of the line), when runtime_ns is unset
    bool explored = false;  ///< an exploration pick (tune::exploration_picks)
};

// Checks or creates o.out: with o.resume, that tune.json names graph `ident` and `mode`, and
// returns the earlier measurements (read_measurements); else creates the directory and its
// tune.json (the checkpoints of `model`, none when null) and returns none. Throws segrank::Error
// naming --out / --resume otherwise.
std::vector<Record> open_tune_dir(const TuneOptions& o, const Graph& g, const Json& ident,
                                  const std::string& mode, const CostModel* model,
                                  const tune::TuneGraph& record);

// Writes DIR/best.json (atomically) for the run state `res`; `rule` says how the default was
// found, `nodes` are g's configurable node ids.
void write_best_json(const std::filesystem::path& file, const Graph& g, const TuneResult& res,
                     const std::string& rule, std::span<const int64_t> nodes);

}  // namespace segrank::cli
