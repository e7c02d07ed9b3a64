// `segrank report` inputs: run directory records, evaluation JSON and leaderboard tables.
#include "report/report.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "gnn/core/check.h"
#include "report/run_checks.h"
#include "util/user_input.h"

namespace segrank {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

double num_or_nan(const Json& v, const std::string& key) { return json_number_or_nan(v, key); }

// An integer member (counts, steps) or `fallback` when absent or not a number.
int64_t int_or(const Json& v, const std::string& key, int64_t fallback) {
    const double d = json_number_or_nan(v, key);
    return std::isfinite(d) ? static_cast<int64_t>(d) : fallback;
}

// Member `key` when it is an array, else nullptr.
const Json* array_at(const Json& v, const std::string& key) {
    if (!v.is_object()) return nullptr;
    const auto it = v.find(key);
    return it != v.end() && it->is_array() ? &*it : nullptr;
}

bool bool_at(const Json& v, const std::string& key) {
    if (!v.is_object()) return false;
    const auto it = v.find(key);
    return it != v.end() && it->is_boolean() && it->get<bool>();
}

std::optional<std::string> read_text(const std::filesystem::path& path, uint64_t max_bytes) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec)) return std::nullopt;
    // A FIFO would block the report; a huge file would exhaust memory.
    return read_input_file(path, "a text file", max_bytes);
}

std::vector<std::string> split_lines(const std::string& text) {
    std::vector<std::string> lines;
    std::istringstream is(text);
    std::string line;
    while (std::getline(is, line)) {
        if (!line.empty() && line.back() == '\r') line.pop_back();
        lines.push_back(std::move(line));
    }
    return lines;
}

// Member `key` of a metrics.jsonl line as a double: NaN when absent or null (the trainer writes a
// value that is not finite as null). Throws naming `where` and the field when it holds another
// type (a string "nan" is not a number).
double metrics_number(const Json& v, const std::string& key, const std::string& where) {
    const auto it = v.find(key);
    if (it == v.end() || it->is_null()) return kNaN;
    SEGRANK_CHECK(it->is_number(), where, ": field \"", key, "\" is a ", it->type_name(), " (",
                  dump_json(*it).substr(0, 40), "), expected a number or null");
    return it->get<double>();
}

// The "step" of a metrics.jsonl line: 0 when absent; throws naming `where` unless it is a
// non-negative integer.
int64_t metrics_step(const Json& v, const std::string& where) {
    const auto it = v.find("step");
    if (it == v.end()) return 0;
    SEGRANK_CHECK(it->is_number_integer() && it->get<int64_t>() >= 0, where, ": field \"step\" is ",
                  dump_json(*it).substr(0, 40), ", expected a non-negative integer");
    return it->get<int64_t>();
}

}  // namespace

CollectionMetrics collection_metrics_from_json(const Json& v, const std::string& where) {
    const auto name = json_string(v, "collection");
    SEGRANK_CHECK(name.has_value(), where, ": collection metrics without a \"collection\" name");
    CollectionMetrics m;
    m.collection = *name;
    m.task = json_string(v, "task").value_or("layout") == "tile" ? Task::kTile : Task::kLayout;
    m.num_graphs = int_or(v, "num_graphs", 0);
    m.num_uninformative = int_or(v, "num_uninformative", 0);
    m.kendall_tau = num_or_nan(v, "kendall_tau");
    m.kendall_raw = num_or_nan(v, "kendall_raw");
    m.opa = num_or_nan(v, "opa");
    m.slowdown_1 = num_or_nan(v, "slowdown_1");
    m.slowdown_5 = num_or_nan(v, "slowdown_5");
    m.slowdown_10 = num_or_nan(v, "slowdown_10");
    m.score = num_or_nan(v, "score");
    return m;
}

std::vector<GraphMetrics> graph_metrics_from_json(const Json& doc, const std::string& where) {
    std::vector<GraphMetrics> out;
    const Json* graphs = array_at(doc, "graphs");
    if (graphs == nullptr) return out;
    for (size_t i = 0; i < graphs->size(); ++i) {
        const Json& g = (*graphs)[i];
        const auto name = json_string(g, "graph");
        SEGRANK_CHECK(name.has_value(), where, ": graphs[", i, "] has no \"graph\" name");
        GraphMetrics m;
        m.name = *name;
        m.num_configs = int_or(g, "num_configs", 0);
        m.targets_constant = bool_at(g, "targets_constant");
        m.kendall_tau = num_or_nan(g, "kendall_tau");
        m.kendall_raw = num_or_nan(g, "kendall_raw");
        m.opa = num_or_nan(g, "opa");
        m.slowdown_1 = num_or_nan(g, "slowdown_1");
        m.slowdown_5 = num_or_nan(g, "slowdown_5");
        m.slowdown_10 = num_or_nan(g, "slowdown_10");
        out.push_back(std::move(m));
    }
    return out;
}

namespace {

// An "eval" / "finetune_eval" / "random_baseline" line of metrics.jsonl (already checked).
RunEval run_eval_from_json(const Json& v, const std::string& phase, int64_t step,
                           const std::string& where) {
    RunEval e;
    e.phase = phase;
    e.step = step;
    e.selection = metrics_number(v, "selection", where);
    e.overall = kNaN;
    if (const auto m = v.find("metrics"); m != v.end()) {
        e.overall = num_or_nan(*m, "overall");
        if (const Json* cs = array_at(*m, "collections"))
            for (const auto& c : *cs)
                e.collections.push_back(collection_metrics_from_json(c, where));
    }
    return e;
}

// A "schedule" line (its fields' types and ranges checked by check_metrics_line).
RunSchedule run_schedule_from_json(const Json& v, int64_t step, const std::string& where) {
    RunSchedule sc;
    sc.step = step;
    for (auto [key, field] : {std::pair{"total_steps", &sc.total_steps},
                              {"warmup_steps", &sc.warmup_steps},
                              {"eval_every", &sc.eval_every},
                              {"log_every", &sc.log_every}}) {
        SEGRANK_CHECK(v.contains(key), where, ": a \"schedule\" line without \"", key,
                      "\" (segrank train writes it)");
        *field = v[key].get<int64_t>();
    }
    return sc;
}

// A "train" line's numbers (NaN where absent or null).
RunTrainPoint run_train_point_from_json(const Json& v, int64_t step, const std::string& where) {
    RunTrainPoint p;
    p.step = step;
    p.epoch = metrics_number(v, "epoch", where);
    p.loss = metrics_number(v, "loss", where);
    p.lr = metrics_number(v, "lr", where);
    p.steps_per_s = metrics_number(v, "steps_per_s", where);
    p.peak_rss_mb = metrics_number(v, "peak_rss_mb", where);
    return p;
}

}  // namespace

RunRecords load_run(const std::filesystem::path& dir, std::string_view selection_metric,
                    std::optional<Task> task) {
    SEGRANK_CHECK(std::filesystem::is_directory(dir), dir.string(), ": not a run directory");
    RunRecords r;
    r.dir = dir;
    const auto metrics_path = dir / "metrics.jsonl";
    const auto text = read_text(metrics_path, kMaxLinesFileBytes);
    if (auto rep = read_text(dir / "report.json", kMaxJsonFileBytes))
        r.report = read_json(*rep, (dir / "report.json").string());
    if (!task)
        task = task_of_evaluations(text ? split_lines(*text) : std::vector<std::string>{}, r.report,
                                   dir);
    r.task = task;
    if (text) {
        const auto lines = split_lines(*text);
        // Only an unterminated last line can be one the trainer is still writing; a complete line
        // that does not parse is as malformed as any other.
        const bool terminated = text->empty() || text->back() == '\n';
        bool nonfinite_noted = false;
        // The trainer writes steps in order (a resume first drops the lines after its checkpoint).
        int64_t last_step = 0, last_train_step = -1;
        size_t last_step_line = 0;
        for (size_t i = 0; i < lines.size(); ++i) {
            if (lines[i].find_first_not_of(" \t") == std::string::npos) continue;
            const std::string where = str(metrics_path.string(), ":", i + 1);
            Json v;
            try {
                v = read_json(lines[i], metrics_path.string(), static_cast<int64_t>(i + 1));
            } catch (const Error&) {
                if (i + 1 == lines.size() && !terminated) {
                    r.notes.push_back(where +
                                      ": torn last line skipped (no line end: is the run still "
                                      "writing?)");
                    continue;
                }
                throw;
            }
            SEGRANK_CHECK(v.is_object(), where, ": expected a JSON object per line");
            SEGRANK_CHECK(!v.contains("phase") || v["phase"].is_string(), where,
                          ": field \"phase\" is ", dump_json(v["phase"]).substr(0, 40),
                          ", expected a string");
            const std::string phase = json_string(v, "phase").value_or("");
            const int64_t step = metrics_step(v, where);
            if (v.contains("step")) {
                SEGRANK_CHECK(step >= last_step, where, ": field \"step\" is ", step,
                              ", before step ", last_step, " of line ", last_step_line,
                              " (segrank train writes the steps in order)");
                last_step = step;
                last_step_line = i + 1;
            }
            if (phase == "train") {
                SEGRANK_CHECK(step > last_train_step, where, ": field \"step\" is ", step,
                              ", expected above ", last_train_step,
                              " (the step of the previous \"train\" line)");
                last_train_step = step;
            }
            check_metrics_line(v, phase, selection_metric, task, where);
            const int schedule = static_cast<int>(r.schedules.size()) - 1;
            if (phase == "schedule") {
                r.schedules.push_back(run_schedule_from_json(v, step, where));
            } else if (phase == "train") {
                RunTrainPoint p = run_train_point_from_json(v, step, where);
                p.schedule = schedule;
                if (!std::isfinite(p.loss) && !nonfinite_noted) {
                    nonfinite_noted = true;
                    r.notes.push_back(str(where, ": the training loss at step ", step,
                                          " is not finite (null); the loss curve has a gap there "
                                          "(the run diverged?)"));
                }
                r.train.push_back(p);
            } else if (phase == "eval" || phase == "finetune_eval" || phase == "random_baseline") {
                RunEval e = run_eval_from_json(v, phase, step, where);
                e.schedule = schedule;
                if (phase == "random_baseline") {
                    r.random_baseline = std::move(e);
                } else {
                    r.evals.push_back(std::move(e));
                }
            }
        }
    } else {
        r.notes.push_back(metrics_path.string() + ": absent (no training curves)");
    }
    if (auto cfg = read_text(dir / "config.toml", kMaxConfigFileBytes)) {
        r.config_text = std::move(*cfg);
    } else {
        r.notes.push_back((dir / "config.toml").string() + ": absent (no effective config)");
    }
    if (r.report) {
        check_report_json(*r.report, selection_metric, task, (dir / "report.json").string());
        check_report_against_metrics(r, dir);
    } else {
        r.notes.push_back((dir / "report.json").string() + ": absent (the run has not finished)");
    }
    return r;
}

namespace {

// The header of `segrank leaderboard --out-csv` (eval/leaderboard.cpp header_cells).
const std::vector<std::string> kLeaderboardHeader = {"rank",
                                                     "name",
                                                     "overall",
                                                     "tile:xla",
                                                     "layout:xla:default",
                                                     "layout:xla:random",
                                                     "layout:nlp:default",
                                                     "layout:nlp:random",
                                                     "graphs",
                                                     "missing",
                                                     "status"};

// A leaderboard CSV header: rank,name,overall first, then only leaderboard columns.
bool is_leaderboard_header(const std::vector<std::string>& h) {
    if (h.size() < 3 || h[0] != "rank" || h[1] != "name" || h[2] != "overall") return false;
    return std::all_of(h.begin() + 3, h.end(), [](const std::string& c) {
        return std::find(kLeaderboardHeader.begin() + 3, kLeaderboardHeader.end(), c) !=
               kLeaderboardHeader.end();
    });
}

// The number in a leaderboard cell; throws naming `where` and the column unless the whole cell is
// one finite number.
double cell_number(const std::string& cell, const std::string& where, const std::string& column) {
    double v = 0.0;
    const char* end = cell.data() + cell.size();
    const auto [ptr, ec] = std::from_chars(cell.data(), end, v);
    SEGRANK_CHECK(ec == std::errc() && ptr == end && std::isfinite(v), where, ": ", column, " ",
                  echo_value(cell), " is not a finite number");
    return v;
}

// Checks one row of a leaderboard table against what `segrank leaderboard` writes
// (docs/metrics.md#kaggle-scores): rank empty or an integer >= 1; a layout collection's score (a
// Kendall tau) in [-1, 1]; tile:xla's (1 - mean slowdown@5) and overall (a mean of them) at most 1;
// graphs and missing empty or integers >= 0; an empty cell is no score. Throws naming `where`.
void check_leaderboard_row(const std::vector<std::string>& header,
                           const std::vector<std::string>& row, const std::string& where) {
    for (size_t k = 0; k < header.size(); ++k) {
        const std::string& c = header[k];
        const std::string& cell = row[k];
        if (cell.empty() || c == "name" || c == "status") continue;
        const double v = cell_number(cell, where, c);
        if (c == "rank" || c == "graphs" || c == "missing") {
            const double lo = c == "rank" ? 1.0 : 0.0;
            SEGRANK_CHECK(v == std::floor(v) && v >= lo && v <= 9e15, where, ": ", c, " ",
                          echo_value(cell), " is not an integer >= ", lo);
        } else if (c.starts_with("layout:")) {
            SEGRANK_CHECK(v >= -1.0 && v <= 1.0, where, ": ", c, " ", echo_value(cell),
                          " is outside [-1, 1] (a layout score is a Kendall tau)");
        } else {
            SEGRANK_CHECK(v <= 1.0, where, ": ", c, " ", echo_value(cell),
                          " is above 1 (tile:xla is 1 - mean slowdown@5, overall the mean of the "
                          "collection scores)");
        }
    }
}

// A status cell as `segrank leaderboard` writes it: "ok", "ok (N warning[s])", "invalid (N
// error[s])" (N >= 1).
bool is_leaderboard_status(std::string_view s) {
    auto counted = [&](std::string_view prefix, std::string_view noun) {
        if (!s.starts_with(prefix) || !s.ends_with(")")) return false;
        std::string_view mid = s.substr(prefix.size(), s.size() - prefix.size() - 1);
        const size_t sp = mid.find(' ');
        if (sp == 0 || sp == std::string_view::npos) return false;
        const std::string_view num = mid.substr(0, sp), word = mid.substr(sp + 1);
        if (num.find_first_not_of("0123456789") != std::string_view::npos || num[0] == '0')
            return false;
        return word == (num == "1" ? noun : std::string(noun) + "s");
    };
    return s == "ok" || counted("ok (", "warning") || counted("invalid (", "error");
}

// Checks the rows of a leaderboard table against each other (`segrank leaderboard` writes them
// so): overall is the mean of the row's collection scores (within the 4-decimal rounding of a
// --json table), and the ranked rows are numbered 1, 2, ... in file order with overall not rising.
// `where[i]` names row i. Throws naming it.
void check_leaderboard_consistency(const TextTable& t, const std::vector<std::string>& where) {
    int64_t expected_rank = 1;
    double previous = std::numeric_limits<double>::infinity();
    for (size_t i = 0; i < t.rows.size(); ++i) {
        const auto& row = t.rows[i];
        double sum = 0.0;
        int64_t n = 0;
        for (size_t k = 3; k < t.header.size(); ++k)
            if ((t.header[k] == "tile:xla" || t.header[k].starts_with("layout:")) &&
                !row[k].empty()) {
                sum += cell_number(row[k], where[i], t.header[k]);
                ++n;
            }
        if (row[2].empty()) continue;
        const double overall = cell_number(row[2], where[i], "overall");
        if (n > 0) {
            const double mean = sum / static_cast<double>(n);
            SEGRANK_CHECK(std::fabs(overall - mean) <= 2e-4, where[i], ": overall ",
                          echo_value(row[2]), " is not the mean of the row's collection scores (",
                          format_fixed(mean, 4), ")");
        }
        if (row[0].empty()) continue;
        const double rank = cell_number(row[0], where[i], "rank");
        SEGRANK_CHECK(rank == static_cast<double>(expected_rank), where[i], ": rank ", row[0],
                      ", expected ", expected_rank,
                      " (ranked rows are numbered 1, 2, ... in order of overall, highest first)");
        SEGRANK_CHECK(overall <= previous + 2e-4, where[i], ": rank ", row[0], " has overall ",
                      row[2], ", above the overall of rank ", expected_rank - 1,
                      " (ranks are by overall, highest first)");
        previous = overall;
        ++expected_rank;
    }
}

std::string joined(const std::vector<std::string>& cells) {
    std::string out;
    for (const auto& c : cells) out += (out.empty() ? "" : ",") + c;
    return out;
}

}  // namespace

TextTable load_leaderboard_table(const std::filesystem::path& path) {
    // A leaderboard table, CSV or JSON, has one row per submission.
    const auto text = read_text(path, kMaxJsonFileBytes);
    SEGRANK_CHECK(text.has_value(), path.string(), ": cannot open for reading");
    TextTable t;
    std::vector<std::string> where;  // where[i] names row i
    if (path.extension() == ".json") {
        const Json doc = read_json(*text, path.string());
        const Json* entries = array_at(doc, "entries");
        SEGRANK_CHECK(entries != nullptr, path.string(),
                      ": expected `segrank leaderboard --json` output with an \"entries\" array");
        t.header = kLeaderboardHeader;
        for (const Json& e : *entries) {
            std::vector<std::string> row(t.header.size());
            const bool valid = bool_at(e, "valid");
            const int64_t rank = int_or(e, "rank", 0);
            row[0] = valid && rank > 0 ? std::to_string(rank) : "";
            row[1] = json_string(e, "name").value_or("");
            row[2] = format_fixed(num_or_nan(e, "overall"), 4);
            if (const Json* cs = array_at(e, "collections")) {
                for (const Json& c : *cs) {
                    const std::string name = json_string(c, "collection").value_or("");
                    for (size_t k = 3; k < 8; ++k) {
                        if (t.header[k] == name) row[k] = format_fixed(num_or_nan(c, "score"), 4);
                    }
                }
            }
            if (valid) {
                row[8] = std::to_string(int_or(e, "graphs_scored", 0));
                row[9] = std::to_string(int_or(e, "graphs_missing", 0));
            }
            row[10] = valid ? "ok" : "invalid";
            where.push_back(str(path.string(), ": entries[", t.rows.size(), "]"));
            check_leaderboard_row(t.header, row, where.back());
            t.rows.push_back(std::move(row));
        }
        check_leaderboard_consistency(t, where);
        return t;
    }
    const std::string expected =
        str("expected the header of `segrank leaderboard --out-csv` (", joined(kLeaderboardHeader),
            "), or its --json output in a file named *.json");
    // Checked before the CSV parse, so a TOML or other text file gets this message, not a CSV
    // syntax error.
    SEGRANK_CHECK(text->starts_with("rank,name,overall"), path.string(),
                  ":1: not a leaderboard table: ", expected);
    auto records = parse_csv_records(*text, path.string());
    SEGRANK_CHECK(!records.empty(), path.string(), ":1: empty file, expected a CSV header");
    SEGRANK_CHECK(is_leaderboard_header(records[0].fields), path.string(), ":1: header ",
                  joined(records[0].fields), " is not a leaderboard header: ", expected);
    t.header = std::move(records[0].fields);
    const auto status = std::find(t.header.begin(), t.header.end(), "status") - t.header.begin();
    for (size_t i = 1; i < records.size(); ++i) {
        where.push_back(str(path.string(), ":", records[i].line));
        SEGRANK_CHECK(records[i].fields.size() == t.header.size(), where.back(), ": ",
                      records[i].fields.size(), " fields, the header has ", t.header.size());
        check_leaderboard_row(t.header, records[i].fields, where.back());
        if (static_cast<size_t>(status) < t.header.size()) {
            const std::string& st = records[i].fields[static_cast<size_t>(status)];
            SEGRANK_CHECK(is_leaderboard_status(st), where.back(), ": status ", echo_value(st),
                          " is not one segrank leaderboard writes (ok, ok (N warnings), invalid "
                          "(N errors))");
        }
        t.rows.push_back(std::move(records[i].fields));
    }
    check_leaderboard_consistency(t, where);
    return t;
}

}  // namespace segrank
