// The lines of a `segrank tune` directory's measurements.jsonl and the rules every reader applies
// (tune --resume and report read it through this one reader, so the rules cannot drift;
// docs/tune.md#files).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "util/json.h"

namespace segrank::tune {

/// One line of measurements.jsonl as segrank tune writes it.
struct MeasurementLine {
    int64_t line = 0;                   ///< 1-based line number in the file
    int64_t round = 0;                  ///< >= 0; round 0 measures the default
    std::optional<int64_t> config;      ///< "config": an index of the graph's recorded configs
                                        ///< (in [0, ConfigBound::num_configs))
    std::optional<Json> rows;           ///< "rows" (--candidates search): the config's rows
    std::optional<double> measured_ns;  ///< the runtime (> 0, finite); unset: a failed measurement
    std::string error;                  ///< why it failed, when measured_ns is unset
    std::optional<double> best_ns;      ///< the fastest measured_ns of this and earlier lines
    /// "explored" (a model-guided run): true for an exploration pick, false for a best-ranked
    /// one (and the default); unset on lines of a model-free run and of files written before
    /// the field (see exploration_picks).
    std::optional<bool> explored;
};

/// A measurements.jsonl file read by read_measurements_file.
struct MeasurementsFile {
    std::vector<MeasurementLine> lines;
    bool torn = false;      ///< the last line was torn (a kill mid-write) and left out
    int64_t torn_line = 0;  ///< its line number when torn
    std::string kept;       ///< the text of the kept lines (the file without its torn last line)
};

/// The number of recorded configs of the tuned graph, which bounds every "config" index, and where
/// that number comes from (named in the refusal: "tune.json" for report, empty for the loaded
/// graph).
struct ConfigBound {
    int64_t num_configs = 0;  ///< > 0; a "config" must be < num_configs
    std::string source;       ///< e.g. "tune.json"; empty: the graph itself
    /// The graph's task, "tile" or "layout", and its configurable node count: the shape of
    /// "rows" (tile: 24 numbers; layout: num_config_nodes rows of 18 integers in -1..127).
    std::string task;
    int64_t num_config_nodes = 0;
};

/// Checks a tune directory's tune.json `doc` (read from `file`) against what segrank tune writes
/// (tune --resume and report apply it): an object whose "graph" is an object with "name" a
/// string, "task" "tile" or "layout", "num_nodes" and "num_config_nodes" integers >= 0,
/// "num_configs" an integer > 0 and "runtimes_fnv1a" a string; and, when present, "where" a
/// string, "measure" a --measure value (recorded, hwmodel[:FAMILY], exec:CMD), "noise" in [0, 5]
/// (--noise), "candidates" recorded or search, "strategy" model, anneal or random, "checkpoints" an
/// array of strings. Throws segrank::Error naming `file`, the field, its value and what was
/// expected. Returns the ConfigBound of the graph ("tune.json" as its source).
ConfigBound check_tune_json(const Json& doc, const std::string& file);

/// Reads `file` (absent: no lines) with the rules of the writer: every complete line is a JSON
/// object with an integer "round" >= 0, not below the previous line's, "rows" (of the shape
/// ConfigBound says, when it names a task) or an integer "config" in [0, bound.num_configs)
/// ("measurements.jsonl:9: config 999 is out of range (tune.json: the graph has 12 configs)"; a
/// config named the same way twice is refused: "is measured twice"), "measured_ns" a finite
/// number > 0 without an "error", or null with its "error" (a non-empty string: why the
/// measurement failed), and "best_ns", when present, null before the first success and then the
/// fastest "measured_ns" so far, and "explored", when present, a boolean (false in round 0, the
/// default's). A last line without its line end, or a last line that is not
/// JSON, is torn (a kill mid-write) and left out. Throws segrank::Error naming file:line, the
/// field, its value and what was expected; or when the file cannot be read.
MeasurementsFile read_measurements_file(const std::filesystem::path& file,
                                        const ConfigBound& bound);

/// Which of `lines` (in file order) were exploration picks of the model's rounds
/// (docs/tune.md#the-rounds): a line's "explored" when it has one; a line without it (a file of
/// segrank tune before the field, which explored a quarter of every round after its best-ranked
/// picks) counts as explored when it is among the last max(1, n / 4) lines of its round of n >= 2
/// lines, round 0 (the default) excepted. Returns one flag per line.
std::vector<bool> exploration_picks(const std::vector<MeasurementLine>& lines);

}  // namespace segrank::tune
