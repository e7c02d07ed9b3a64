// Kaggle-style leaderboard (docs/metrics.md#submissions-and-validation,
// docs/files.md#submission-csv): ground truth from npz collections or HDF5 stores, validation of
// submission CSVs with file:line issues, scoring with the metrics of eval/metrics.h (so `segrank
// leaderboard` and `segrank evaluate` agree), ranked tables.
//
// Policies (also in `segrank leaderboard --help`):
// - Unknown graph (an ID of a collection present in the truth that names no truth graph): error.
//   Rows of collections absent from the truth are ignored with one warning per collection.
// - Missing graph (in the truth, not in the submission): by default a warning, and the graph is
//   scored as the worst possible submission for it (layout: configs listed slowest first, tau -1
//   when runtimes are distinct; tile: the min(5, c) slowest configs), so leaving graphs out never
//   helps. MissingPolicy::kSkip leaves them out of the means; kError makes the submission invalid.
// - Invalid submissions (any error) are reported in full and not scored; the others are ranked.
#pragma once
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "data/collection.h"
#include "eval/metrics.h"
#include "eval/submission.h"

namespace segrank {

/// Ground truth of one graph.
struct TruthGraph {
    std::string id;               ///< submission ID, e.g. "layout:xla:random:bert"
    size_t collection = 0;        ///< index into Truth::collections
    std::vector<double> targets;  ///< [c] tile: runtime / normalizer; layout: runtime (ns); all > 0
    std::string source;           ///< file (or store) the graph came from, for messages
};

/// Ground truth of every graph of the scored collection splits.
class Truth {
public:
    /// Adds a graph. Throws segrank::Error naming `source` when the ID repeats, `targets` is empty
    /// or a target is not a finite value > 0.
    void add(const CollectionId& collection, const std::string& stem, std::vector<double> targets,
             const std::string& source);
    /// The collections in the order they were first added.
    const std::vector<CollectionId>& collections() const { return collections_; }
    /// The graphs in the order added.
    const std::vector<TruthGraph>& graphs() const { return graphs_; }
    /// The graph with submission ID `id`, or nullptr.
    const TruthGraph* find(const std::string& id) const;
    /// Index of `c.name()` in collections() (split ignored), or -1.
    int64_t collection_index(const std::string& name) const;
    /// Number of graphs of collection i.
    int64_t collection_size(size_t i) const;

private:
    std::vector<CollectionId> collections_;
    std::vector<TruthGraph> graphs_;
    std::map<std::string, size_t> by_id_;
};

/// Loads the truth from `inputs`: TpuGraphs npz roots / collection folders (the collections of
/// split `split` are used, plus loose folders whose split is unknown), folders of `segrank pack`
/// stores (filtered the same way) or .h5 stores named explicitly (used whatever their split).
/// Throws segrank::Error when no collection of `split` is found (listing those found), when a
/// collection appears twice, or when a graph has no runtimes (all 0: the public test split is
/// unlabelled and cannot be scored) or a runtime <= 0.
Truth load_truth(const std::vector<std::filesystem::path>& inputs, Split split);

enum class Severity { kError, kWarning };

/// One validation finding. `where` is "file:line" for a row, "file" for the whole file.
struct Issue {
    Severity severity = Severity::kError;
    std::string where;
    std::string message;
    /// "error: <where>: <message>" or "warning: ...".
    std::string to_string() const;
};

/// What to do with truth graphs a submission leaves out (see the file comment).
enum class MissingPolicy { kWorst, kSkip, kError };
/// "worst" | "skip" | "error"; throws segrank::Error listing them otherwise.
MissingPolicy parse_missing_policy(std::string_view s);
const char* to_string(MissingPolicy p);

/// A submission after validation: its usable rows (rows of truth graphs that passed every check,
/// tile rows truncated to their first 5 entries) and every issue found.
struct CheckedSubmission {
    std::string name;                 ///< file stem: the leaderboard name
    std::string file;                 ///< path as given
    std::vector<SubmissionRow> rows;  ///< valid rows of truth graphs
    std::vector<Issue> issues;
    bool valid() const;  ///< no issue of severity kError
};

/// Validates submission CSV text against the truth; `file` names it in issues. Checks: not binary
/// (an HDF5 file, a zip/.npz, a .npy or bytes with a NUL is one error naming what it is, no raw
/// bytes), header `ID,TopConfigs` (a UTF-8 BOM is tolerated), two fields per row, ID format,
/// unknown and duplicate IDs, indices that are not non-negative integers, out of [0, c) or
/// repeated, tile rows with fewer than min(5, c) entries (more than 5: warning, the first 5 count),
/// layout rows that are not permutations of 0..c-1, and missing graphs per `missing`. Never throws
/// for bad content.
CheckedSubmission check_submission_text(std::string_view text, const std::string& file,
                                        const Truth& truth, MissingPolicy missing);
/// Reads `path` and validates it (an unreadable file is one error issue).
CheckedSubmission check_submission(const std::filesystem::path& path, const Truth& truth,
                                   MissingPolicy missing);

/// Scores the model order of one row as evaluate_graph expects: [c] scores, listed position p
/// gets p (tile: only the first min(5, c) entries), unlisted configs all get the list length.
std::vector<float> submission_scores(std::span<const int64_t> top_configs, int64_t num_configs,
                                     Task task);
/// The worst submission scores for `targets` ([c]): slowest first, equal targets equal scores.
/// evaluate_graph breaks those score ties by config index (its tie policy), so a missing graph
/// scores as the worst permutation: tau-b -1 when the targets have no ties, above -1 otherwise.
std::vector<float> worst_scores(std::span<const double> targets);

/// One leaderboard line.
struct LeaderboardEntry {
    std::string name;  ///< file stem
    std::string file;
    bool valid = false;
    std::vector<Issue> issues;
    /// Scored collections in truth order. Tile collections carry kendall_tau, opa and slowdown_10
    /// as NaN: a tile row lists only 5 configs, so only slowdown@1 and @5 are defined.
    std::vector<CollectionMetrics> collections;
    double overall = 0.0;        ///< mean of collections[i].score (NaN when none)
    int64_t graphs_scored = 0;   ///< truth graphs scored from the submission's rows
    int64_t graphs_missing = 0;  ///< truth graphs without a row
    int64_t rank = 0;            ///< 1-based among valid entries; 0 for invalid ones
};

/// Scores a checked submission (invalid ones get valid = false and no scores).
/// Uses evaluate_graph / aggregate_collection / overall_score of eval/metrics.h.
LeaderboardEntry score_submission(const CheckedSubmission& sub, const Truth& truth,
                                  MissingPolicy missing);

/// Renames entries whose names (file stems) coincide by their shortest distinguishing path suffix:
/// "d1/x.csv" and "d2/x.csv" become "d1/x" and "d2/x"; the same path given twice is numbered in
/// input order ("x", "x #2"). Other names stay as they are.
void name_entries_uniquely(std::vector<LeaderboardEntry>& entries);

/// Names entries uniquely (name_entries_uniquely), sorts valid entries by overall (descending;
/// ties by name) and numbers them; invalid entries follow, unranked, in input order.
void rank_entries(std::vector<LeaderboardEntry>& entries);

/// The five Kaggle collection names in table order.
const std::vector<std::string>& kaggle_collections();

/// Score of `collection` in an entry, or nullopt when not scored.
std::optional<double> collection_score(const LeaderboardEntry& e, const std::string& collection);

/// Fixed-width table for the terminal: rank, name, overall, the five collections (blank when
/// absent), graphs scored, missing, status.
std::string format_leaderboard_text(const std::vector<LeaderboardEntry>& entries);
/// Same table as GitHub Markdown.
std::string format_leaderboard_markdown(const std::vector<LeaderboardEntry>& entries);
/// CSV `rank,name,overall,tile:xla,layout:xla:default,layout:xla:random,layout:nlp:default,
/// layout:nlp:random,graphs,missing,status`; numbers spelled as in the JSON (format_number), blanks
/// for absent.
std::string format_leaderboard_csv(const std::vector<LeaderboardEntry>& entries);
/// JSON {"split", "missing_policy", "entries": [{rank, name, file, valid, overall, graphs_scored,
/// graphs_missing, collections: [to_json(CollectionMetrics)...], issues: [{severity, where,
/// message}]}]}; NaN as null.
std::string format_leaderboard_json(const std::vector<LeaderboardEntry>& entries, Split split,
                                    MissingPolicy missing);

}  // namespace segrank
