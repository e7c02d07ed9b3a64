// Range checks of the files `segrank evaluate` and `segrank train` write (report/run_checks.h),
// taken from their writers: eval/metrics.cpp (to_json), trainer/evaluation.cpp (selection),
// trainer/trainer_run.cpp (metrics.jsonl lines, report.json).
#include "report/run_checks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <type_traits>

#include "eval/metric_fields.h"
#include "eval/selection_range.h"
#include "gnn/core/check.h"
#include "report/report.h"
#include "util/user_input.h"

namespace segrank {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
// Rounding slack of a computed ratio (a tau-b, an OPA) at its bound.
constexpr double kSlack = 1e-9;
// What the trainer's selection value is when no collection had one (trainer/evaluation.cpp).
constexpr double kNoSelection = -1e300;

// A closed range [lo, hi] and how a message names it.
struct Range {
    double lo = -kInf, hi = kInf;
    const char* text = "a number";
};

constexpr Range kTau{-1.0, 1.0, "in [-1, 1]"};
constexpr Range kUnit{0.0, 1.0, "in [0, 1]"};
constexpr Range kNonNegative{0.0, kInf, ">= 0"};
constexpr Range kAtMostOne{-kInf, 1.0, "at most 1"};

std::string shown(const Json& v) { return echo_value(dump_json(v), 60); }

// Member `key` of `obj`, or nullptr when absent.
const Json* member(const Json& obj, const std::string& key) {
    const auto it = obj.find(key);
    return it == obj.end() ? nullptr : &*it;
}

// A present `key` is a finite number in `r`, or null when `null_ok`.
void check_number(const Json& obj, const std::string& key, Range r, const std::string& where,
                  bool null_ok = true) {
    const Json* v = member(obj, key);
    if (v == nullptr || (null_ok && v->is_null())) return;
    const bool ok = v->is_number() && std::isfinite(v->get<double>()) &&
                    v->get<double>() >= r.lo - kSlack && v->get<double>() <= r.hi + kSlack;
    SEGRANK_CHECK(ok, where, " \"", key, "\" is ", shown(*v), ", expected ",
                  r.lo == -kInf && r.hi == kInf ? "a finite number" : str("a number ", r.text),
                  null_ok ? " or null" : "");
}

// A present `key` is an integer >= `lo`.
void check_integer(const Json& obj, const std::string& key, int64_t lo, const std::string& where) {
    const Json* v = member(obj, key);
    if (v == nullptr) return;
    SEGRANK_CHECK(v->is_number_integer() && v->get<int64_t>() >= lo, where, " \"", key, "\" is ",
                  shown(*v), ", expected an integer >= ", lo);
}

void check_bool(const Json& obj, const std::string& key, const std::string& where) {
    const Json* v = member(obj, key);
    SEGRANK_CHECK(v == nullptr || v->is_boolean(), where, " \"", key, "\" is ", shown(*v),
                  ", expected true or false");
}

// The range of a metric field of visit_metric_fields by its key.
Range metric_range(std::string_view key) {
    if (key == "kendall_tau" || key == "kendall_raw") return kTau;
    if (key == "opa") return kUnit;
    if (key == "score") return kAtMostOne;
    return kNonNegative;  // slowdown_1/5/10, mape, median_ape
}

// Every present metric field of `m` (a GraphMetrics or CollectionMetrics type) by its writer's
// type: counts integers >= 0, flags booleans, values numbers in metric_range or null.
template <typename M>
void check_metric_fields(const Json& obj, const std::string& where) {
    const M fields{};
    visit_metric_fields(
        [&](const MetricField& f, const auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, bool>) {
                check_bool(obj, f.key, where);
            } else if constexpr (std::is_integral_v<T>) {
                check_integer(obj, f.key, 0, where);
            } else {
                check_number(obj, f.key, metric_range(f.key), where);
            }
        },
        fields);
}

// Two numbers one segrank writer derived from the other (doubles written in full, "%.17g"): equal
// up to the rounding of a mean taken in another order.
bool same_value(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

// `key` of `obj` as a double: NaN when absent or null (the writers' NaN), else the number.
double number_or_nan(const Json& obj, const std::string& key) {
    const Json* v = member(obj, key);
    return v != nullptr && v->is_number() ? v->get<double>() : std::nan("");
}

// The selection value eval.metric `metric` gives the eval result's collections `cs`: the mean of
// sign x its field where finite (trainer/evaluation.cpp selection_value), -1e300 when none is.
double expected_selection(const Json& cs, std::string_view metric) {
    const SelectionField field = selection_field(metric);
    double sum = 0.0;
    int64_t n = 0;
    for (const Json& c : cs) {
        const double x = field.sign * number_or_nan(c, std::string(field.key));
        if (!std::isfinite(x)) continue;
        sum += x;
        ++n;
    }
    return n > 0 ? sum / static_cast<double>(n) : kNoSelection;
}

// A selection value of eval.metric `metric` is the mean of its field over the line's collections:
// checked when both are there. With the metric unknown (no config.toml, no checkpoint) it is the
// mean of one of the fields a metric can select.
void check_selection_matches_metrics(const Json& v, std::string_view metric,
                                     const std::string& where) {
    const Json* sel = member(v, "selection");
    const Json* m = member(v, "metrics");
    const Json* cs = m != nullptr && m->is_object() ? member(*m, "collections") : nullptr;
    if (sel == nullptr || !sel->is_number() || cs == nullptr || !cs->is_array()) return;
    const double x = sel->get<double>();
    if (metric.empty()) {
        std::string means;
        for (const char* name :
             {"kaggle", "kendall", "opa", "slowdown_1", "slowdown_5", "slowdown_10"}) {
            const double want = expected_selection(*cs, name);
            if (same_value(x, want)) return;
            means += str(means.empty() ? "" : ", ", name, " ", want);
        }
        SEGRANK_CHECK(false, where, " \"selection\" is ", shown(*sel),
                      ", the value of no eval.metric on the line's collections (", means,
                      "; the run's eval.metric is unknown: no config.toml or checkpoint)");
    }
    const double want = expected_selection(*cs, metric);
    const SelectionField field = selection_field(metric);
    SEGRANK_CHECK(same_value(x, want), where, " \"selection\" is ", shown(*sel), ", expected ",
                  want != kNoSelection ? str(want) : std::string("-1e300 (no collection has one)"),
                  field.sign < 0 ? " (minus the mean of the collections' \""
                                 : " (the mean of the collections' \"",
                  field.key, "\": eval.metric = ", metric, ")");
}

// The collection metrics of an evaluate --json document aggregate its per-graph ones
// (eval/metrics.cpp aggregate_collection): the collections count as many graphs as "graphs" lists,
// and a single collection's metrics are the aggregate of all of them.
void check_graphs_match_collections(const Json& doc, const std::string& file) {
    const Json* gs = member(doc, "graphs");
    const Json* m = member(doc, "metrics");
    const Json* cs = m != nullptr && m->is_object() ? member(*m, "collections") : nullptr;
    if (gs == nullptr || cs == nullptr || !cs->is_array() || cs->empty()) return;
    int64_t counted = 0;
    for (const Json& c : *cs) counted += c.value("num_graphs", int64_t{0});
    SEGRANK_CHECK(counted == static_cast<int64_t>(gs->size()), file,
                  ": the collections of \"metrics\" count ", counted, " graphs, \"graphs\" lists ",
                  gs->size());
    if (cs->size() != 1 || gs->empty()) return;
    const CollectionMetrics got = collection_metrics_from_json((*cs)[0], file);
    const CollectionMetrics want =
        aggregate_collection(got.collection, got.task, graph_metrics_from_json(doc, file));
    visit_metric_fields(
        [&](const MetricField& f, const auto& w, const auto& g) {
            using T = std::decay_t<decltype(w)>;
            if constexpr (std::is_same_v<T, double>) {
                if (f.regression_only) return;  // per-graph errors are not read back
                const bool ok = std::isnan(w) ? std::isnan(g) : !std::isnan(g) && same_value(g, w);
                SEGRANK_CHECK(ok, file, ": metrics collections[0] \"", f.key, "\" is ",
                              std::isnan(g) ? std::string("null") : str(g), ", expected ",
                              std::isnan(w) ? std::string("null") : str(w),
                              " (the aggregate of the document's \"graphs\")");
            } else if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
                SEGRANK_CHECK(g == w, file, ": metrics collections[0] \"", f.key, "\" is ", g,
                              ", expected ", w, " (counted from the document's \"graphs\")");
            }
        },
        want, got);
}

void check_object(const Json& v, const std::string& where, const char* what) {
    SEGRANK_CHECK(v.is_object(), where, " is ", shown(v), ", expected ", what);
}

}  // namespace

void check_graph_metrics_json(const Json& g, const std::string& where) {
    check_object(g, where, "an object of per-graph metrics");
    const Json* name = member(g, "graph");
    SEGRANK_CHECK(name != nullptr && name->is_string(), where, " has no \"graph\" name");
    check_metric_fields<GraphMetrics>(g, where);
}

void check_collection_metrics_json(const Json& c, const std::string& where) {
    check_object(c, where, "an object of collection metrics");
    const Json* name = member(c, "collection");
    SEGRANK_CHECK(name != nullptr && name->is_string(), where,
                  ": collection metrics without a \"collection\" name");
    const Json* task = member(c, "task");
    SEGRANK_CHECK(task == nullptr || *task == "tile" || *task == "layout", where, " \"task\" is ",
                  shown(*task), ", expected \"tile\" or \"layout\"");
    check_metric_fields<CollectionMetrics>(c, where);
    if (task == nullptr || *task == "layout") check_number(c, "score", kTau, where);
    // score is the collection's Kaggle score (eval/metrics.cpp aggregate_collection).
    const Json* score = member(c, "score");
    if (task != nullptr && score != nullptr) {
        const bool tile = *task == "tile";
        const Json* from = member(c, tile ? "slowdown_5" : "kendall_tau");
        if (from != nullptr) {
            const double want =
                tile ? 1.0 - number_or_nan(c, "slowdown_5") : number_or_nan(c, "kendall_tau");
            const double got = number_or_nan(c, "score");
            SEGRANK_CHECK(
                std::isnan(want) == std::isnan(got) && (std::isnan(want) || same_value(got, want)),
                where, " \"score\" is ", shown(*score), ", expected ",
                std::isnan(want) ? std::string("null") : str(want),
                tile ? " (1 - slowdown_5 of a tile collection)"
                     : " (the kendall_tau of a layout collection)");
        }
    }
    const Json* n = member(c, "num_graphs");
    const Json* u = member(c, "num_uninformative");
    if (n != nullptr && u != nullptr)
        SEGRANK_CHECK(u->get<int64_t>() <= n->get<int64_t>(), where, " \"num_uninformative\" is ",
                      shown(*u), ", more than \"num_graphs\" ", shown(*n));
}

void check_eval_result_json(const Json& m, const std::string& where, std::optional<Task> task) {
    check_object(m, where, "an object {\"overall\", \"collections\"}");
    const SelectionRange overall_range = overall_score_range(task);
    check_number(m, "overall", {overall_range.lo, overall_range.hi, overall_range.text.c_str()},
                 where);
    const Json* cs = member(m, "collections");
    if (cs == nullptr) return;
    SEGRANK_CHECK(cs->is_array(), where, " \"collections\" is ", shown(*cs), ", expected an array");
    double sum = 0.0;
    bool all_scored = true;
    for (size_t i = 0; i < cs->size(); ++i) {
        const std::string at = str(where, " collections[", i, "]");
        // One run trains one task (trainer/config_task.h): its evaluations hold only that task.
        const Json* ctask = (*cs)[i].is_object() ? member((*cs)[i], "task") : nullptr;
        if (task.has_value() && ctask != nullptr)
            SEGRANK_CHECK(*ctask == std::string(to_string(*task)), at, " \"task\" is ",
                          shown(*ctask), ", expected \"", to_string(*task),
                          "\" (the run's task, from its config.toml or checkpoint)");
        check_collection_metrics_json((*cs)[i], at);
        const Json* score = member((*cs)[i], "score");
        if (score == nullptr || !score->is_number()) {
            all_scored = false;
            continue;
        }
        sum += score->get<double>();
    }
    // overall is the mean of the collections' scores (eval/metrics.h overall_score).
    const Json* overall = member(m, "overall");
    if (overall == nullptr || !overall->is_number() || cs->empty()) return;
    SEGRANK_CHECK(all_scored, where, " \"overall\" is ", shown(*overall),
                  ", expected null (a collection has no score, so their mean has none)");
    const double mean = sum / static_cast<double>(cs->size());
    SEGRANK_CHECK(same_value(overall->get<double>(), mean), where, " \"overall\" is ",
                  shown(*overall), ", expected the mean of the collections' scores, ", mean);
}

void check_selection_json(const Json& v, std::string_view metric, std::optional<Task> task,
                          const std::string& where, const std::string& key) {
    const Json* s = member(v, key);
    if (s == nullptr || s->is_null()) return;
    if (s->is_number() && s->get<double>() == kNoSelection) return;
    const SelectionRange r = selection_range(metric, task);
    const double x = s->is_number() ? s->get<double>() : std::nan("");
    SEGRANK_CHECK(std::isfinite(x) && x >= r.lo - kSlack && x <= r.hi + kSlack, where, " \"", key,
                  "\" is ", shown(*s), ", expected ", r.text,
                  metric.empty() ? std::string() : str(" (eval.metric = ", metric, ")"),
                  " or null");
}

void check_evaluate_json(const Json& doc, const std::string& file, std::optional<Task> task) {
    check_object(doc, file, "`segrank evaluate --json` output (a JSON object)");
    const Json* kind = member(doc, "kind");
    SEGRANK_CHECK(kind == nullptr || *kind == "segrank evaluate", file, ": \"kind\" is ",
                  shown(*kind), ", expected \"segrank evaluate\"");
    const Json* ck = member(doc, "checkpoint");
    SEGRANK_CHECK(ck == nullptr || ck->is_string(), file, ": \"checkpoint\" is ", shown(*ck),
                  ", expected the path of a checkpoint (a string)");
    for (const char* key : {"evaluated", "data_root"}) {
        const Json* v = member(doc, key);
        SEGRANK_CHECK(v == nullptr || v->is_string(), file, ": \"", key, "\" is ", shown(*v),
                      ", expected a string");
    }
    const Json* id = member(doc, "checkpoint_id");
    SEGRANK_CHECK(
        id == nullptr || (id->is_string() && id->get<std::string>().starts_with("xxh3_64:")), file,
        ": \"checkpoint_id\" is ", shown(*id),
        ", expected a checkpoint's identity (\"xxh3_64:<16 hex digits>\")");
    if (const Json* gs = member(doc, "graphs"); gs != nullptr) {
        SEGRANK_CHECK(gs->is_array(), file, ": \"graphs\" is ", shown(*gs), ", expected an array");
        for (size_t i = 0; i < gs->size(); ++i)
            check_graph_metrics_json((*gs)[i], str(file, ": graphs[", i, "]"));
    }
    if (const Json* m = member(doc, "metrics"))
        check_eval_result_json(*m, str(file, ": metrics"), task);
    check_graphs_match_collections(doc, file);
}

void check_report_json(const Json& doc, std::string_view metric, std::optional<Task> task,
                       const std::string& file) {
    check_object(doc, file, "the report.json segrank train writes (a JSON object)");
    const std::string at = file + ":";
    check_integer(doc, "steps", 0, at);
    check_integer(doc, "best_step", -1, at);  // -1: no evaluation yet
    check_integer(doc, "world_size", 1, at);
    check_number(doc, "steps_per_s", kNonNegative, at);
    check_number(doc, "peak_rss_mb", kNonNegative, at);
    check_bool(doc, "stopped_early", at);
    const Json* steps = member(doc, "steps");
    const Json* best = member(doc, "best_step");
    if (steps != nullptr && best != nullptr)
        SEGRANK_CHECK(best->get<int64_t>() <= steps->get<int64_t>(), at, " \"best_step\" is ",
                      shown(*best), ", after the last step (\"steps\" ", shown(*steps), ")");
    check_selection_json(doc, metric, task, at, "best_selection");
    for (const char* key : {"final", "random_baseline"})
        if (const Json* m = member(doc, key)) check_eval_result_json(*m, str(at, " ", key), task);
    if (const Json* gs = member(doc, "graphs"); gs != nullptr) {
        SEGRANK_CHECK(gs->is_array(), at, " \"graphs\" is ", shown(*gs), ", expected an array");
        for (size_t i = 0; i < gs->size(); ++i)
            check_graph_metrics_json((*gs)[i], str(at, " graphs[", i, "]"));
    }
}

void check_metrics_line(const Json& v, std::string_view phase, std::string_view metric,
                        std::optional<Task> task, const std::string& where) {
    const std::string at = where + ":";
    if (phase == "train") {
        // Every loss term is >= 0 and their weights are >= 0 (trainer/config_check.cpp).
        for (const char* key : {"epoch", "loss", "lr", "steps_per_s", "step_wall_s", "step_busy_s",
                                "step_cpu_s", "step_cpu_max_s", "rank_cpu_max_s", "peak_rss_mb"})
            check_number(v, key, kNonNegative, at);
        for (const char* key : {"history_entries", "history_hits", "history_misses"})
            check_integer(v, key, 0, at);
        return;
    }
    if (phase == "schedule") {
        check_integer(v, "total_steps", 1, at);
        for (const char* key : {"warmup_steps", "eval_every", "log_every"})
            check_integer(v, key, 0, at);
        return;
    }
    if (phase == "random_baseline") check_integer(v, "seeds", 1, at);
    if (const Json* m = member(v, "metrics")) check_eval_result_json(*m, at + " metrics", task);
    if (phase == "eval" || phase == "finetune_eval") {
        check_selection_json(v, metric, task, at, "selection");
        check_selection_matches_metrics(v, metric, at);
    }
}

namespace {

// The tasks the collections of eval result `result` name ("tile", "layout"), added to `tasks`.
void add_result_tasks(const Json* result, std::set<std::string>& tasks) {
    const Json* cs =
        result != nullptr && result->is_object() ? member(*result, "collections") : nullptr;
    if (cs == nullptr || !cs->is_array()) return;
    for (const Json& c : *cs) {
        const Json* t = c.is_object() ? member(c, "task") : nullptr;
        if (t != nullptr && t->is_string()) tasks.insert(t->get<std::string>());
    }
}

}  // namespace

std::optional<Task> task_of_evaluations(const std::vector<std::string>& lines,
                                        const std::optional<Json>& report,
                                        const std::filesystem::path& dir) {
    std::set<std::string> tasks;
    for (const std::string& line : lines) {
        try {
            const Json v = read_json(line, "", 0);
            if (v.is_object() && v.contains("metrics")) add_result_tasks(&v["metrics"], tasks);
        } catch (const Error&) {  // named by load_run's own pass
        }
    }
    if (report && report->is_object())
        for (const char* key : {"final", "random_baseline"})
            if (report->contains(key)) add_result_tasks(&(*report)[key], tasks);
    SEGRANK_CHECK(tasks.size() <= 1, dir.string(),
                  ": its evaluations list both tile and layout collections (one run trains one "
                  "task)");
    if (tasks.empty() || (*tasks.begin() != "tile" && *tasks.begin() != "layout")) return {};
    return parse_task(*tasks.begin());
}

std::string eval_checkpoint_mismatch(const Json& doc, const std::filesystem::path& run_dir,
                                     const std::vector<std::string>& run_checkpoint_ids) {
    namespace fs = std::filesystem;
    const Json* id = doc.is_object() ? member(doc, "checkpoint_id") : nullptr;
    if (id != nullptr && id->is_string() && !run_checkpoint_ids.empty()) {
        const std::string& mine = id->get<std::string>();
        if (std::find(run_checkpoint_ids.begin(), run_checkpoint_ids.end(), mine) !=
            run_checkpoint_ids.end())
            return "";
        std::string theirs;  // each id once (best.ckpt.h5 and last.ckpt.h5 are often one model)
        for (size_t i = 0; i < run_checkpoint_ids.size(); ++i)
            if (std::find(run_checkpoint_ids.begin(), run_checkpoint_ids.begin() + i,
                          run_checkpoint_ids[i]) == run_checkpoint_ids.begin() + i)
                theirs += (theirs.empty() ? "" : ", ") + run_checkpoint_ids[i];
        return str("\"checkpoint_id\" is \"", echo_value(mine, 64), "\", the identity of none of ",
                   run_dir.string(), "'s checkpoints (", theirs,
                   "): it evaluated another model (one this run directory held before a retrain "
                   "or --overwrite, or another run's)");
    }
    // The writer that records "evaluated" records checkpoint_id too: one without it was edited.
    if (id == nullptr && doc.is_object() && member(doc, "evaluated") != nullptr)
        return "it records \"evaluated\" but no \"checkpoint_id\" (segrank evaluate writes "
               "both), so its model cannot be checked against this run's";
    const Json* ck = doc.is_object() ? member(doc, "checkpoint") : nullptr;
    if (ck == nullptr || !ck->is_string())
        return "it records no \"checkpoint\" (segrank evaluate --json always does), so nothing "
               "says its per-graph metrics are this run's";
    const fs::path file = ck->get<std::string>();
    const fs::path folder = file.has_parent_path() ? file.parent_path() : fs::path(".");
    std::error_code ec;
    bool same = false;
    if (fs::is_regular_file(file, ec)) {
        same = fs::equivalent(folder, run_dir, ec) && !ec;
    } else {
        const auto name = [](const fs::path& p) {
            const fs::path n = fs::absolute(p).lexically_normal();
            return n.has_filename() ? n.filename() : n.parent_path().filename();
        };
        same = name(folder) == name(run_dir) && fs::is_regular_file(run_dir / file.filename(), ec);
    }
    if (same) return "";
    return str("\"checkpoint\" is ", echo_value(dump_json(*ck), 4096), ", not a checkpoint of ",
               run_dir.string(), " (its per-graph metrics are another run's)");
}

}  // namespace segrank
