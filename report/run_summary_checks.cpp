// check_report_against_metrics (report/run_checks.h): a run's report.json summary held to the
// metrics.jsonl it summarizes, by the rules of their writer: trainer/trainer_run.cpp (run,
// evaluate_and_select, write_final_report) and trainer/selection.cpp (decide_selection).
#include <algorithm>
#include <cmath>
#include <set>
#include <string>
#include <string_view>
#include <tuple>

#include "eval/metric_fields.h"
#include "gnn/core/check.h"
#include "report/report.h"
#include "report/run_checks.h"

namespace segrank {
namespace {

// Two doubles one writer wrote from the same value ("%.17g" round trip), up to the rounding of a
// mean taken in another order.
bool same_value(double a, double b) { return std::abs(a - b) <= 1e-9 * std::max(1.0, std::abs(b)); }

// Two metric values that are both null (NaN) or the same number.
bool same_or_both_null(double a, double b) {
    return std::isnan(a) ? std::isnan(b) : !std::isnan(b) && same_value(a, b);
}

constexpr const char* kBestRule =
    "best.ckpt.h5 is the model of the evaluation with the highest selection, and report.json "
    "names it";

// Drops r.report with a note when metrics.jsonl does not hold the run it describes: lines beyond
// its "steps" (a resume that has not ended), lines lost before them, or no evaluation line (a
// run's end logs one before it writes report.json). True when dropped.
bool drop_unbacked_summary(RunRecords& r, const std::string& file, int64_t steps) {
    int64_t last = -1;  // the last step metrics.jsonl logs
    for (const auto& t : r.train) last = std::max(last, t.step);
    for (const RunEval& e : r.evals) last = std::max(last, e.step);
    std::string why;
    if (steps >= 0 && last > steps) {
        why = str(file, ": describes the run up to step ", steps,
                  ", but metrics.jsonl runs to step ", last, " (a resume that has not ended?)");
    } else if (steps > last) {  // an empty or missing metrics.jsonl too: nothing backs the summary
        why = last >= 0 ? str(file, ": describes the run up to step ", steps,
                              ", but metrics.jsonl ends at step ", last,
                              " (lines lost, or report.json edited?)")
                        : str(file, ": describes the run up to step ", steps,
                              ", but metrics.jsonl holds no whole line (lost or cut?)");
    } else if (r.evals.empty()) {
        why = str(file,
                  ": metrics.jsonl holds no evaluation line, but a run logs its last evaluation "
                  "before it writes report.json (lines lost, or report.json edited?)");
    }
    if (why.empty()) return false;
    r.notes.push_back(why + ": its summary is not drawn");
    r.report.reset();
    return true;
}

// best_step names an evaluation (-1 only without any), best_selection is a selection of an
// evaluation at best_step, and both name the highest selection in metrics.jsonl: train keeps the
// evaluation whose selection is above every earlier one (eval.select_later_on_ties, which a
// resume may change, also a later equal one), eval and finetune_eval alike.
void check_best(const RunRecords& r, const std::string& file) {
    const Json& rep = *r.report;
    const int64_t best_step = rep.value("best_step", int64_t{-1});
    SEGRANK_CHECK(best_step >= 0 || !rep.contains("best_step"), file,
                  ": \"best_step\" is -1 (no evaluation), but metrics.jsonl has ", r.evals.size(),
                  " evaluation line(s)");
    if (best_step >= 0) {
        std::string steps_seen;  // the evaluation steps, for the message
        bool found = false;
        for (const RunEval& e : r.evals) {
            found = found || e.step == best_step;
            if (steps_seen.size() < 200) steps_seen += str(steps_seen.empty() ? "" : ", ", e.step);
        }
        SEGRANK_CHECK(found, file, ": \"best_step\" is ", best_step,
                      ", but metrics.jsonl has no evaluation at that step (evaluations at steps ",
                      steps_seen, ")");
    }
    const auto sel = rep.find("best_selection");
    const bool has_selection = sel != rep.end() && sel->is_number();
    if (has_selection && best_step >= 0) {
        std::string seen;  // the selections of the evaluations at best_step
        bool matched = false;
        for (const RunEval& e : r.evals) {
            if (e.step != best_step || !std::isfinite(e.selection)) continue;
            matched = matched || same_value(sel->get<double>(), e.selection);
            seen += str(seen.empty() ? "" : ", ", e.selection, " (", e.phase, ")");
        }
        SEGRANK_CHECK(matched || seen.empty(), file, ": \"best_selection\" is ", sel->get<double>(),
                      ", but the evaluations of its best_step ", best_step,
                      " in metrics.jsonl have selection ", seen);
    }
    const RunEval* top = nullptr;  // the first evaluation with the highest selection
    for (const RunEval& e : r.evals)
        if (std::isfinite(e.selection) && (top == nullptr || e.selection > top->selection))
            top = &e;
    if (top == nullptr) return;  // no line logs a selection
    std::string top_steps;       // the steps of the evaluations with that selection (ties)
    bool best_step_is_top = false;
    int64_t listed = -1;
    for (const RunEval& e : r.evals) {
        if (!std::isfinite(e.selection) || !same_value(e.selection, top->selection)) continue;
        best_step_is_top = best_step_is_top || e.step == best_step;
        if (e.step != listed && top_steps.size() < 200)
            top_steps += str(top_steps.empty() ? "" : ", ", e.step);
        listed = e.step;
    }
    const std::string top_text = format_number(top->selection);
    SEGRANK_CHECK(!has_selection || same_value(sel->get<double>(), top->selection), file,
                  ": \"best_selection\" is ", format_number(sel->get<double>()),
                  ", but the highest selection in metrics.jsonl is ", top_text, " (step(s) ",
                  top_steps, "; ", kBestRule, ")");
    SEGRANK_CHECK(best_step < 0 || best_step_is_top, file, ": \"best_step\" is ", best_step,
                  ", but the highest selection in metrics.jsonl, ", top_text, ", is at step(s) ",
                  top_steps, " (", kBestRule, ")");
}

void check_metrics_field(const RunRecords& r, const std::string& file, const char* key,
                         const RunEval& want_line, const std::string& line, const char* rule);

// report.json's "final" is the metrics of the run's last evaluation line (the end's "eval", or its
// "finetune_eval" with segments.finetune_epochs): overall, and per collection in the same order
// its name, task and every metric field (null where the line's is null).
void check_final(const RunRecords& r, const std::string& file) {
    const RunEval& last = r.evals.back();
    check_metrics_field(
        r, file, "final", last,
        str("the last evaluation line of metrics.jsonl (step ", last.step, ", ", last.phase, ")"),
        " (\"final\" is the metrics of the run's last evaluation)");
}

// report.json's "random_baseline" is the metrics of the log's random_baseline line when both are
// there (train writes both from one evaluation; the page draws the log's).
void check_random_baseline(const RunRecords& r, const std::string& file) {
    if (!r.random_baseline) return;
    check_metrics_field(r, file, "random_baseline", *r.random_baseline,
                        "the random_baseline line of metrics.jsonl",
                        " (both are the run's random-ranking baseline)");
}

// report.json's metrics object `key` equals the log line `want`: overall, and per collection in
// the same order its name, task and every metric field (null where the line's is null).
void check_metrics_field(const RunRecords& r, const std::string& file, const char* key,
                         const RunEval& want_line, const std::string& line, const char* rule) {
    const auto fin = r.report->find(key);
    if (fin == r.report->end() || !fin->is_object()) return;
    const RunEval& last = want_line;
    const double overall = json_number_or_nan(*fin, "overall");
    SEGRANK_CHECK(same_or_both_null(overall, last.overall), file, ": \"", key, "\" \"overall\" is ",
                  format_number(overall), ", but ", line, " has ", format_number(last.overall),
                  rule);
    const auto cs = fin->find("collections");
    const size_t n = cs != fin->end() && cs->is_array() ? cs->size() : 0;
    SEGRANK_CHECK(n == last.collections.size(), file, ": \"", key, "\" lists ", n,
                  " collection(s), but ", line, " has ", last.collections.size(), rule);
    for (size_t i = 0; i < n; ++i) {
        const std::string at = str(file, ": \"", key, "\" collections[", i, "]");
        const CollectionMetrics got = collection_metrics_from_json((*cs)[i], at);
        const CollectionMetrics& want = last.collections[i];
        SEGRANK_CHECK(got.collection == want.collection && got.task == want.task, at, " is ",
                      got.collection, " (", to_string(got.task), "), but ", line, " has ",
                      want.collection, " (", to_string(want.task), ") there", rule);
        visit_metric_fields(
            [&](const MetricField& f, const auto& g, const auto& w) {
                using T = std::decay_t<decltype(g)>;
                bool same = false;
                std::string got_text, want_text;
                if constexpr (std::is_same_v<T, double>) {
                    same = same_or_both_null(g, w);
                    got_text = format_number(g);
                    want_text = format_number(w);
                } else {
                    same = g == w;
                    got_text = str(g);
                    want_text = str(w);
                }
                SEGRANK_CHECK(same, at,
                              (*cs)[i].contains(f.key) ? str(" \"", f.key, "\" is ", got_text)
                                                       : str(" has no \"", f.key, "\""),
                              ", but ", line, " has ", want_text, rule);
            },
            got, want);
    }
}

}  // namespace

void check_report_against_metrics(RunRecords& r, const std::filesystem::path& dir) {
    const std::string file = (dir / "report.json").string();
    if (drop_unbacked_summary(r, file, r.report->value("steps", int64_t{-1}))) return;
    check_best(r, file);
    check_final(r, file);
    check_random_baseline(r, file);
}

namespace {

// lr within 1e-12 (relative) of `want`.
bool same_lr(double lr, double want) {
    return std::abs(lr - want) <= 1e-12 * std::max(std::abs(want), 1e-300);
}

// One schedule line against config.toml (`last`: the run's last part, whose keys config.toml
// holds).
void check_schedule_line(const RunSchedule& s, const RunScheduleConfig& c, bool last,
                         const std::string& file) {
    const std::string at = str(file, ": the schedule line of step ", s.step);
    SEGRANK_CHECK(s.step < s.total_steps, at, " has total_steps ", s.total_steps,
                  " (a run's part starts below its last step)");
    const int64_t warmup =
        std::min<int64_t>(c.lr.warmup_steps, std::max<int64_t>(0, s.total_steps - 1));
    SEGRANK_CHECK(s.warmup_steps == warmup, at, " has warmup_steps ", s.warmup_steps,
                  ", but config.toml's optim.warmup_steps = ", c.lr.warmup_steps,
                  " over total_steps ", s.total_steps, " gives ", warmup);
    if (!last) return;
    SEGRANK_CHECK(s.eval_every == c.eval_every && s.log_every == c.log_every, at,
                  " has eval_every ", s.eval_every, " and log_every ", s.log_every,
                  ", but config.toml (the run's last part) has train.eval_every = ", c.eval_every,
                  " and train.log_every = ", c.log_every);
    SEGRANK_CHECK(c.epochs > 0 || s.total_steps == c.steps, at, " has total_steps ", s.total_steps,
                  ", but config.toml (the run's last part) has train.steps = ", c.steps,
                  " and no train.epochs");
}

}  // namespace

namespace {

// Steps in (from, last] at multiples of `every`, and `extra` (-1: none), that `have` lacks, as
// "10, 20 (and 3 more)"; "" when none does.
std::string missing_steps(const std::set<int64_t>& have, int64_t from, int64_t last, int64_t every,
                          int64_t extra) {
    std::set<int64_t> want;
    if (every > 0)
        for (int64_t st = (from / every + 1) * every; st <= last && want.size() < 100000;
             st += every)
            want.insert(st);
    if (extra > from) want.insert(extra);
    std::string text;
    int64_t missing = 0;
    for (int64_t st : want) {
        if (have.count(st) > 0) continue;
        if (++missing <= 5) text += str(text.empty() ? "" : ", ", st);
    }
    if (missing > 5) text += str(" (and ", missing - 5, " more)");
    return text;
}

// A note per part of the run (schedule line) whose eval or train lines skip a step its schedule
// logs at, up to its last line of that kind: lines lost or removed from the middle of the file.
void note_missing_lines(RunRecords& r, const std::string& file) {
    for (size_t k = 0; k < r.schedules.size(); ++k) {
        const RunSchedule& s = r.schedules[k];
        std::set<int64_t> evals, trains;
        for (const RunEval& e : r.evals)
            if (e.schedule == static_cast<int>(k) && e.phase == "eval") evals.insert(e.step);
        for (const RunTrainPoint& t : r.train)
            if (t.schedule == static_cast<int>(k)) trains.insert(t.step);
        // A part a resume followed ran to the next schedule line's step (its checkpoint), and a
        // part that reached its total_steps evaluated there; the run's last part, up to its last
        // line of each kind (report.json's "final" holds its last evaluation).
        const bool followed = k + 1 < r.schedules.size();
        const int64_t next = followed ? r.schedules[k + 1].step : -1;
        for (const auto& [kind, have, every, key] :
             {std::tuple{"eval", &evals, s.eval_every, "eval_every"},
              std::tuple{"train", &trains, s.log_every, "log_every"}}) {
            const bool is_eval = std::string_view(kind) == "eval";
            const int64_t last = followed ? (is_eval ? std::min(next, s.total_steps - 1) : next)
                                          : (have->empty() ? s.step : *have->rbegin());
            const int64_t extra = followed && is_eval && next == s.total_steps ? next : -1;
            const std::string gaps = missing_steps(*have, s.step, last, every, extra);
            if (!gaps.empty())
                r.notes.push_back(str(file, ": no ", kind, " line at step(s) ", gaps,
                                      ", which the schedule line of step ", s.step, " (", key, " ",
                                      every, ") logs",
                                      followed ? str(" before the next part starts at step ", next)
                                               : str(" before its last ", kind, " line"),
                                      " (lines lost or removed?): the curves skip them"));
        }
    }
}

}  // namespace

void check_train_schedule(RunRecords& r, const RunScheduleConfig& c,
                          const std::filesystem::path& dir) {
    const std::string file = (dir / "metrics.jsonl").string();
    const double peak = c.lr.base_lr;
    const bool constant = c.lr.kind == LrScheduleKind::kConstant;
    for (size_t i = 0; i < r.schedules.size(); ++i)
        check_schedule_line(r.schedules[i], c, i + 1 == r.schedules.size(), file);
    for (const RunTrainPoint& t : r.train) {
        if (std::isnan(t.lr)) continue;  // null: not drawn
        const std::string at = str(file, ": the train line of step ", t.step);
        const bool ok = constant ? same_lr(t.lr, peak) : t.lr <= peak * (1 + 1e-12);
        SEGRANK_CHECK(ok, at, " has lr ", format_number(t.lr),
                      ", but config.toml has optim.lr = ", format_number(peak),
                      constant ? " with optim.schedule = \"constant\" (every step's lr)"
                               : " (the schedule's peak: warmup and cosine decay stay below it)");
        if (t.schedule < 0) continue;
        const RunSchedule& s = r.schedules[static_cast<size_t>(t.schedule)];
        SEGRANK_CHECK(t.step <= s.total_steps && s.log_every > 0 && t.step % s.log_every == 0, at,
                      ": the schedule line of step ", s.step, " logs every ", s.log_every,
                      " step(s) up to step ", s.total_steps);
        LrSchedule lr = c.lr;
        lr.warmup_steps = s.warmup_steps;
        lr.total_steps = s.total_steps;
        const double want = lr.at(t.step - 1);
        SEGRANK_CHECK(same_lr(t.lr, want), at, " has lr ", format_number(t.lr),
                      ", but the schedule (optim.lr = ", format_number(peak), ", warmup_steps ",
                      s.warmup_steps, ", total_steps ", s.total_steps,
                      " of the schedule line of step ", s.step, ") gives ", format_number(want));
    }
    const bool unscheduled = (!r.train.empty() && r.train.front().schedule < 0) ||
                             (!r.evals.empty() && r.evals.front().schedule < 0);
    if (unscheduled)
        r.notes.push_back(str(file,
                              ": no \"schedule\" line before its first train or evaluation line "
                              "(a run written before segrank logged one, or a line removed): its "
                              "learning rates and steps are held only to optim.lr"));
    for (const RunEval& e : r.evals) {
        // finetune_eval follows the fine-tuning steps after the part's last evaluation.
        if (e.schedule < 0 || e.phase != "eval") continue;
        const RunSchedule& s = r.schedules[static_cast<size_t>(e.schedule)];
        SEGRANK_CHECK(e.step == s.total_steps || (e.step < s.total_steps && s.eval_every > 0 &&
                                                  e.step % s.eval_every == 0),
                      file, ": the ", e.phase, " line of step ", e.step,
                      " is not an evaluation step of the schedule line of step ", s.step,
                      " (every ", s.eval_every, " step(s) before its last, ", s.total_steps, ")");
    }
    note_missing_lines(r, file);
}

}  // namespace segrank
