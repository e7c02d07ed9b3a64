// Range checks of the files `segrank evaluate` and `segrank train` write (report/run_checks.h),
// taken from their writers: eval/metrics.cpp (to_json), trainer/evaluation.cpp (selection),
// trainer/trainer_run.cpp (metrics.jsonl lines, report.json).
#include "report/run_checks.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <type_traits>

#include "eval/metric_fields.h"
#include "eval/selection_range.h"
#include "gnn/core/check.h"
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
    double lo = kInf, hi = -kInf;
    bool all_scored = true;
    for (size_t i = 0; i < cs->size(); ++i) {
        const std::string at = str(where, " collections[", i, "]");
        check_collection_metrics_json((*cs)[i], at);
        // One run trains one task (trainer/config_task.h): its evaluations hold only that task.
        const Json* ctask = member((*cs)[i], "task");
        if (task.has_value() && ctask != nullptr)
            SEGRANK_CHECK(*ctask == std::string(to_string(*task)), at, " \"task\" is ",
                          shown(*ctask), ", expected \"", to_string(*task),
                          "\" (the run's task, from its config.toml or checkpoint)");
        const Json* score = member((*cs)[i], "score");
        if (score == nullptr || !score->is_number()) {
            all_scored = false;
            continue;
        }
        lo = std::min(lo, score->get<double>());
        hi = std::max(hi, score->get<double>());
    }
    // overall is the mean of the collections' scores (eval/metrics.h overall_score).
    const Json* overall = member(m, "overall");
    if (!all_scored || overall == nullptr || !overall->is_number() || cs->empty()) return;
    const double x = overall->get<double>();
    SEGRANK_CHECK(x >= lo - kSlack && x <= hi + kSlack, where, " \"overall\" is ", shown(*overall),
                  ", expected the mean of the collections' scores, in [", lo, ", ", hi, "]");
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
    if (phase == "random_baseline") check_integer(v, "seeds", 1, at);
    if (phase == "eval" || phase == "finetune_eval")
        check_selection_json(v, metric, task, at, "selection");
    if (const Json* m = member(v, "metrics")) check_eval_result_json(*m, at + " metrics", task);
}

std::string eval_checkpoint_mismatch(const Json& doc, const std::filesystem::path& run_dir,
                                     const std::vector<std::string>& run_checkpoint_ids) {
    namespace fs = std::filesystem;
    const Json* id = doc.is_object() ? member(doc, "checkpoint_id") : nullptr;
    if (id != nullptr && id->is_string() &&
        std::find(run_checkpoint_ids.begin(), run_checkpoint_ids.end(), id->get<std::string>()) !=
            run_checkpoint_ids.end())
        return "";
    const Json* ck = doc.is_object() ? member(doc, "checkpoint") : nullptr;
    if (ck == nullptr || !ck->is_string()) return "";
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
