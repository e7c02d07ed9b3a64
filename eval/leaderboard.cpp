// Leaderboard scoring (through eval/metrics.h, so numbers equal `segrank evaluate`), ranking
// and the text / Markdown / CSV / JSON tables.
#include "eval/leaderboard.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>
#include <map>
#include <numeric>

#include "gnn/core/check.h"
#include "util/json.h"
#include "util/text_table.h"

namespace segrank {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// CSV cells carry the numbers of the JSON (format_number); NaN is an empty cell.
std::string csv_number(double v) { return std::isfinite(v) ? format_number(v) : std::string(); }

std::string status_of(const LeaderboardEntry& e) {
    int64_t errors = 0, warnings = 0;
    for (const Issue& i : e.issues) (i.severity == Severity::kError ? errors : warnings)++;
    if (!e.valid) return str("invalid (", errors, " error", errors == 1 ? "" : "s", ")");
    if (warnings > 0) return str("ok (", warnings, " warning", warnings == 1 ? "" : "s", ")");
    return "ok";
}

// One row of cells: rank, name, overall, five collections, graphs, missing, status.
std::vector<std::string> row_cells(const LeaderboardEntry& e, bool csv) {
    std::vector<std::string> cells;
    cells.push_back(e.valid ? std::to_string(e.rank) : "");
    cells.push_back(e.name);
    auto num = [&](double v) { return csv ? csv_number(v) : format_fixed(v, 4); };
    cells.push_back(e.valid ? num(e.overall) : "");
    for (const std::string& c : kaggle_collections()) {
        const auto s = collection_score(e, c);
        cells.push_back(s ? num(*s) : "");
    }
    cells.push_back(e.valid ? std::to_string(e.graphs_scored) : "");
    cells.push_back(e.valid ? std::to_string(e.graphs_missing) : "");
    cells.push_back(status_of(e));
    return cells;
}

std::vector<std::string> header_cells() {
    std::vector<std::string> h = {"rank", "name", "overall"};
    for (const std::string& c : kaggle_collections()) h.push_back(c);
    h.push_back("graphs");
    h.push_back("missing");
    h.push_back("status");
    return h;
}

}  // namespace

std::vector<float> submission_scores(std::span<const int64_t> top_configs, int64_t num_configs,
                                     Task task) {
    SEGRANK_CHECK(num_configs > 0, "submission_scores: a graph needs at least one config");
    size_t listed = top_configs.size();
    if (task == Task::kTile) listed = std::min<size_t>(listed, 5);
    std::vector<float> scores(static_cast<size_t>(num_configs), static_cast<float>(listed));
    for (size_t p = 0; p < listed; ++p) {
        const int64_t k = top_configs[p];
        SEGRANK_CHECK(k >= 0 && k < num_configs, "submission_scores: config ", k,
                      " out of range [0, ", num_configs, ")");
        scores[static_cast<size_t>(k)] = static_cast<float>(p);
    }
    return scores;
}

std::vector<float> worst_scores(std::span<const double> targets) {
    std::vector<size_t> order(targets.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](size_t a, size_t b) { return targets[a] > targets[b]; });
    std::vector<float> scores(targets.size());
    size_t group = 0;
    for (size_t p = 0; p < order.size(); ++p) {
        if (p > 0 && targets[order[p]] != targets[order[p - 1]]) group = p;
        scores[order[p]] = static_cast<float>(group);
    }
    return scores;
}

LeaderboardEntry score_submission(const CheckedSubmission& sub, const Truth& truth,
                                  MissingPolicy missing) {
    LeaderboardEntry e;
    e.name = sub.name;
    e.file = sub.file;
    e.issues = sub.issues;
    e.valid = sub.valid();
    e.overall = kNaN;
    if (!e.valid) return e;

    const size_t nc = truth.collections().size();
    std::vector<std::vector<GraphMetrics>> per(nc);
    std::map<std::string, const SubmissionRow*> rows;
    for (const SubmissionRow& r : sub.rows) rows.emplace(r.id, &r);
    for (const TruthGraph& g : truth.graphs()) {
        const Task task = truth.collections()[g.collection].task;
        const auto it = rows.find(g.id);
        std::vector<float> scores;
        if (it != rows.end()) {
            scores = submission_scores(it->second->top_configs,
                                       static_cast<int64_t>(g.targets.size()), task);
            ++e.graphs_scored;
        } else {
            ++e.graphs_missing;
            if (missing == MissingPolicy::kSkip) continue;
            SEGRANK_ASSERT(missing == MissingPolicy::kWorst,
                           "missing graphs make a submission invalid");
            scores = worst_scores(g.targets);
        }
        per[g.collection].push_back(evaluate_graph(g.id, scores, g.targets));
    }
    for (size_t ci = 0; ci < nc; ++ci) {
        if (per[ci].empty()) continue;
        const CollectionId& id = truth.collections()[ci];
        CollectionMetrics cm = aggregate_collection(id.name(), id.task, per[ci]);
        if (id.task == Task::kTile) {
            // Only the first 5 configs are known; pair metrics and slowdown@10 are undefined.
            cm.kendall_tau = kNaN;
            cm.kendall_raw = kNaN;
            cm.opa = kNaN;
            cm.slowdown_10 = kNaN;
        }
        e.collections.push_back(cm);
    }
    if (!e.collections.empty()) e.overall = overall_score(e.collections);
    return e;
}

namespace {

// The last `k` components of `file` joined by '/', the last without its extension ("d1/x" for
// "runs/d1/x.csv", k = 2); the whole path when it has fewer.
std::string path_suffix_name(const std::string& file, size_t k) {
    const std::filesystem::path p(file);
    std::vector<std::string> parts;
    for (const auto& c : p.parent_path()) parts.push_back(c.string());
    parts.push_back(p.stem().string());
    const size_t from = parts.size() > k ? parts.size() - k : 0;
    std::string out;
    for (size_t i = from; i < parts.size(); ++i) {
        if (!out.empty() && out.back() != '/') out += '/';
        out += parts[i];
    }
    return out;
}

}  // namespace

void name_entries_uniquely(std::vector<LeaderboardEntry>& entries) {
    std::map<std::string, std::vector<size_t>> by_name;
    for (size_t i = 0; i < entries.size(); ++i) by_name[entries[i].name].push_back(i);
    for (const auto& [name, idx] : by_name) {
        if (idx.size() < 2) continue;
        size_t max_parts = 1;
        for (size_t i : idx) {
            size_t n = 0;
            for (const auto& c : std::filesystem::path(entries[i].file)) n += c.empty() ? 0 : 1;
            max_parts = std::max(max_parts, n);
        }
        const auto distinct = [](std::vector<std::string> v) {
            std::sort(v.begin(), v.end());
            return std::adjacent_find(v.begin(), v.end()) == v.end();
        };
        std::vector<std::string> names;
        for (size_t k = 2; k <= max_parts && (names.empty() || !distinct(names)); ++k) {
            names.clear();
            for (size_t i : idx) names.push_back(path_suffix_name(entries[i].file, k));
        }
        if (names.empty() || !distinct(names)) {  // x.csv and x.tsv: the paths as given
            names.clear();
            for (size_t i : idx) names.push_back(entries[i].file);
        }
        std::map<std::string, int> seen;  // the same path given twice: numbered in input order
        for (size_t j = 0; j < idx.size(); ++j) {
            std::string n = names[j];
            const int count = ++seen[n];
            if (count > 1) n += str(" #", count);
            entries[idx[j]].name = std::move(n);
        }
    }
}

void rank_entries(std::vector<LeaderboardEntry>& entries) {
    name_entries_uniquely(entries);
    std::stable_sort(entries.begin(), entries.end(),
                     [](const LeaderboardEntry& a, const LeaderboardEntry& b) {
                         if (a.valid != b.valid) return a.valid;
                         if (!a.valid) return false;
                         const double oa = std::isnan(a.overall) ? -1e300 : a.overall;
                         const double ob = std::isnan(b.overall) ? -1e300 : b.overall;
                         if (oa != ob) return oa > ob;
                         return a.name < b.name;
                     });
    int64_t rank = 0;
    for (LeaderboardEntry& e : entries) e.rank = e.valid ? ++rank : 0;
}

const std::vector<std::string>& kaggle_collections() {
    static const std::vector<std::string> names = {"tile:xla", "layout:xla:default",
                                                   "layout:xla:random", "layout:nlp:default",
                                                   "layout:nlp:random"};
    return names;
}

std::optional<double> collection_score(const LeaderboardEntry& e, const std::string& collection) {
    for (const CollectionMetrics& c : e.collections) {
        if (c.collection == collection) return c.score;
    }
    return std::nullopt;
}

namespace {

// Rank, name, overall, five collections, graphs, missing, status: names and status left-aligned,
// numbers right-aligned.
TextTable leaderboard_table(const std::vector<LeaderboardEntry>& entries, bool csv) {
    TextTable t;
    t.header = header_cells();
    t.align.assign(t.header.size(), Align::kRight);
    t.align[1] = Align::kLeft;
    t.align.back() = Align::kLeft;
    for (const auto& e : entries) t.rows.push_back(row_cells(e, csv));
    return t;
}

}  // namespace

std::string format_leaderboard_text(const std::vector<LeaderboardEntry>& entries) {
    return format_text(leaderboard_table(entries, false));
}

std::string format_leaderboard_markdown(const std::vector<LeaderboardEntry>& entries) {
    return format_markdown(leaderboard_table(entries, false));
}

std::string format_leaderboard_csv(const std::vector<LeaderboardEntry>& entries) {
    return format_csv(leaderboard_table(entries, true));
}

std::string format_leaderboard_json(const std::vector<LeaderboardEntry>& entries, Split split,
                                    MissingPolicy missing) {
    Json list = Json::array();
    for (const LeaderboardEntry& e : entries) {
        Json collections = Json::array();
        for (const CollectionMetrics& c : e.collections) collections.push_back(to_json(c));
        Json issues = Json::array();
        for (const Issue& is : e.issues)
            issues.push_back({{"severity", is.severity == Severity::kError ? "error" : "warning"},
                              {"where", is.where},
                              {"message", is.message}});
        list.push_back({{"rank", e.rank},
                        {"name", e.name},
                        {"file", e.file},
                        {"valid", e.valid},
                        {"overall", e.overall},
                        {"graphs_scored", e.graphs_scored},
                        {"graphs_missing", e.graphs_missing},
                        {"collections", std::move(collections)},
                        {"issues", std::move(issues)}});
    }
    const Json doc = {{"split", to_string(split)},
                      {"missing_policy", to_string(missing)},
                      {"entries", std::move(list)}};
    return dump_json(doc) + "\n";
}

}  // namespace segrank
