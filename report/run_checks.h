// The ranges of what `segrank evaluate --json` and `segrank train` (metrics.jsonl, report.json)
// write, checked by `segrank report` before it draws a number (docs/files.md#what-segrank-report-
// checks): one validator per kind of object, the metric keys walked from eval/metric_fields.h.
#pragma once
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gnn/core/task.h"
#include "util/json.h"

namespace segrank {

/// Checks a to_json(GraphMetrics) object (an item of "graphs"): "graph" a string; present metric
/// fields of the writer's type and range: num_configs an integer >= 0, targets_constant a boolean,
/// kendall_tau / kendall_raw in [-1, 1], opa in [0, 1], slowdowns, mape and median_ape >= 0 (each
/// a finite number or null). Throws segrank::Error "<where> \"kendall_tau\" is 9, expected in
/// [-1, 1] or null".
void check_graph_metrics_json(const Json& g, const std::string& where);

/// Checks a to_json(CollectionMetrics) object: "collection" a string, "task" "tile" or "layout",
/// num_graphs / num_uninformative integers >= 0 (num_uninformative <= num_graphs), the metric
/// ranges of check_graph_metrics_json, and "score" at most 1 (tile: 1 - slowdown@5) and for a
/// layout collection in [-1, 1] (a Kendall tau). Throws segrank::Error naming `where` and the key.
void check_collection_metrics_json(const Json& c, const std::string& where);

/// Checks an EvalResult::to_json object {"overall", "collections": [...]} of a run of `task`
/// (nullopt: unknown): each collection by check_collection_metrics_json and, when the task is
/// known, of that task; overall a number in overall_score_range(task) (eval/selection_range.h)
/// or null, and within the collections' scores when all have one (it is their mean). Throws
/// naming `where`.
void check_eval_result_json(const Json& m, const std::string& where,
                            std::optional<Task> task = std::nullopt);

/// Checks a selection value (metrics.jsonl "selection", report.json "best_selection") against
/// selection_range(metric, task) (eval/selection_range.h): `metric` is the run's eval.metric
/// ("kaggle", "kendall", "opa", "slowdown_1/5/10"; "" when its config is unknown), `task` its task
/// (from its config.toml or checkpoint, never from the file checked; nullopt when unknown: a
/// kaggle selection is then at most 1). null and -1e300 (no collection had a value) are what the
/// trainer writes without a value. Throws naming `where` and `key`.
void check_selection_json(const Json& v, std::string_view metric, std::optional<Task> task,
                          const std::string& where, const std::string& key);

/// Checks a `segrank evaluate --json` document: a JSON object whose "kind", when present, is
/// "segrank evaluate", "checkpoint" a string, every item of "graphs" by check_graph_metrics_json
/// ("<file>: graphs[3]") and "metrics" by check_eval_result_json (of `task`). Throws naming
/// `file`.
void check_evaluate_json(const Json& doc, const std::string& file,
                         std::optional<Task> task = std::nullopt);

/// Checks a run's report.json (trainer write_final_report): steps / best_step integers >= 0
/// (best_step <= steps), world_size an integer >= 1, steps_per_s and peak_rss_mb numbers >= 0,
/// stopped_early a boolean, best_selection by check_selection_json, "final" and
/// "random_baseline" by check_eval_result_json, "graphs" items by check_graph_metrics_json.
/// Throws naming `file` and the field.
void check_report_json(const Json& doc, std::string_view metric, std::optional<Task> task,
                       const std::string& file);

/// Checks one metrics.jsonl line of a known phase (`where` = "file:line"): "train": lr, epoch,
/// steps_per_s, peak_rss_mb and the timing fields numbers >= 0 or null, the history counts
/// integers >= 0; "eval" / "finetune_eval": "selection" by check_selection_json and "metrics" by
/// check_eval_result_json; "random_baseline": "seeds" an integer >= 1 and "metrics"; "schedule":
/// "total_steps" an integer >= 1, "warmup_steps", "eval_every", "log_every" integers >= 0. Throws
/// segrank::Error naming `where` and the field.
void check_metrics_line(const Json& v, std::string_view phase, std::string_view metric,
                        std::optional<Task> task, const std::string& where);

/// The one task the collections of a run's own evaluations name (every parsable line of
/// metrics.jsonl, `lines`, and report.json's "final" / "random_baseline"): what narrows the checks
/// of a run whose config.toml and checkpoints do not tell its task (a line relabelled to the other
/// task gains nothing: an unknown task already allows either). nullopt when none names a task.
/// Throws segrank::Error naming `dir` when they name both (one run trains one task).
std::optional<Task> task_of_evaluations(const std::vector<std::string>& lines,
                                        const std::optional<Json>& report,
                                        const std::filesystem::path& dir);

struct RunRecords;

/// Holds run `r`'s report.json (read and range-checked) to its metrics.jsonl (r.train, r.evals),
/// the log it summarizes (train writes it at the run's end; --resume removes it first): when the
/// log runs beyond report.json's "steps" (a resume that has not ended), ends before them (lines
/// lost) or holds no evaluation line (a run logs one at its end), report.json is dropped from `r`
/// with a note. Otherwise best_step must be the step of an evaluation (-1 only without any),
/// best_selection the selection of an evaluation at best_step, and both the highest selection of
/// the log's eval / finetune_eval lines (up to 1e-9; on a tie any of its steps, as
/// eval.select_later_on_ties may change on resume), and "final" the metrics of the last of those
/// lines (overall; per collection its name, task and every field, null where the line's is null).
/// Throws segrank::Error naming report.json, the field and the log's value otherwise.
void check_report_against_metrics(RunRecords& r, const std::filesystem::path& dir);

struct RunScheduleConfig;

/// Holds run `r`'s metrics.jsonl to the schedule that wrote it (trainer/trainer_run.cpp run(),
/// gnn/optim.h LrSchedule), with `c` its config.toml's keys:
/// - every "train" line's lr is at most optim.lr (equal with a constant schedule; 1e-12
///   relative);
/// - each "schedule" line starts below its total_steps, and its warmup_steps is
///   min(optim.warmup_steps, total_steps - 1); the last one's eval_every and log_every are
///   config.toml's, and its total_steps train.steps when train.epochs is 0;
/// - under a schedule line, a "train" line is at a multiple of its log_every, at most its
///   total_steps, with lr = LrSchedule{optim.*, its warmup_steps, total_steps}.at(step - 1); an
///   "eval" line at a multiple of its eval_every or at its total_steps (a "finetune_eval" line
///   follows the fine-tuning steps, which count on).
/// Lines before the first schedule line (runs written before it was logged) get the bound only,
/// and a note in r.notes says so; so does a step of a part's schedule, before its last eval (or
/// train) line, that has no such line (lines lost or removed).
/// Throws segrank::Error naming dir/metrics.jsonl, the line's phase and step, the value and the
/// rule otherwise.
void check_train_schedule(RunRecords& r, const RunScheduleConfig& c,
                          const std::filesystem::path& dir);

/// Why the checkpoint a `segrank evaluate --json` document records ("checkpoint") is not one of
/// `run_dir`'s, or "" when it is; a document recording no "checkpoint" is not known to be (the
/// reason is returned). When the document's
/// "checkpoint_id" (the model's identity, CheckpointReader::parameters_id) is one of
/// `run_checkpoint_ids` (those of run_dir's readable checkpoints), it is, wherever the run has
/// moved since; when it is none of them (and there are some), it is not (another model: one the
/// folder held before a retrain, or another run's). A document without that member (written
/// before it existed), or a run without readable checkpoints, is judged by its recorded path, as
/// evaluate was given it: when it names an existing file, its
/// folder must be run_dir (the same directory, not only the same name); when it does not resolve
/// from here (evaluate ran in another working directory, or the run moved), its folder's name must
/// be run_dir's and run_dir must hold a file of its name.
std::string eval_checkpoint_mismatch(const Json& doc, const std::filesystem::path& run_dir,
                                     const std::vector<std::string>& run_checkpoint_ids = {});

}  // namespace segrank
