// `segrank report`: reads a run directory (config.toml, metrics.jsonl,
// report.json), optional `segrank evaluate --json` output and an optional leaderboard table, and
// renders one self-contained HTML page with inline SVG plots (no network, no scripts).
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "eval/metrics.h"
#include "gnn/core/task.h"
#include "gnn/optim.h"
#include "util/json.h"
#include "util/text_table.h"

namespace segrank {

/// One "phase":"schedule" line of metrics.jsonl: what the run's part that starts (or resumes) at
/// `step` logs by (trainer/trainer_run.cpp run()): its last step, the warmup of its learning-rate
/// schedule, and train.eval_every / train.log_every.
struct RunSchedule {
    int64_t step = 0, total_steps = 0, warmup_steps = 0, eval_every = 0, log_every = 0;
};

/// One "phase":"train" line of metrics.jsonl (missing numbers are NaN).
struct RunTrainPoint {
    int64_t step = 0;
    double epoch = 0, loss = 0, lr = 0, steps_per_s = 0, peak_rss_mb = 0;
    /// Index in RunRecords::schedules of the last schedule line before it; -1 when none (a run
    /// written before segrank logged its schedule).
    int schedule = -1;
};

/// One "phase":"eval" or "finetune_eval" line of metrics.jsonl.
struct RunEval {
    std::string phase;
    int64_t step = 0;
    double overall = 0.0;    ///< NaN when null
    double selection = 0.0;  ///< NaN when absent
    std::vector<CollectionMetrics> collections;
    int schedule = -1;  ///< as RunTrainPoint::schedule
};

/// Everything read from a run directory. Absent files leave their part empty and add a note.
struct RunRecords {
    std::filesystem::path dir;
    std::vector<RunTrainPoint> train;
    std::vector<RunEval> evals;
    std::vector<RunSchedule> schedules;
    /// The "phase":"random_baseline" line the trainer writes after training: uniform random scores
    /// on the configs of the run's evaluation (mean over its seeds); nullopt when absent.
    std::optional<RunEval> random_baseline;
    std::string config_text;         ///< config.toml verbatim ("" when absent)
    std::optional<Json> report;      ///< report.json
    std::vector<std::string> notes;  ///< what was missing or skipped, shown in the page
    /// The run's task the checks used: load_run's `task`, else the one task its evaluations name
    /// (nullopt when none does).
    std::optional<Task> task;
};

/// Reads `dir`. Throws segrank::Error when `dir` is not a directory or a metrics.jsonl line is
/// malformed or has a field of the wrong type ("step" not a non-negative integer, "loss" etc. not
/// a number or null, "phase" not a string; named file:line and the field); only a torn last line
/// (no line end: a run still writing) is skipped with a note, and so is a training loss that is not
/// finite (null: the run diverged; the first such line is named). Unknown phases are ignored.
/// Every line and report.json are held to the ranges of what segrank train writes
/// (report/run_checks.h; `selection_metric` is the run's eval.metric, "" when unknown, `task` its
/// task, nullopt when unknown), and the
/// steps must not go back (a "train" line's step is above the previous "train" line's); throws
/// naming file:line and the field otherwise.
RunRecords load_run(const std::filesystem::path& dir, std::string_view selection_metric = "",
                    std::optional<Task> task = std::nullopt);

/// A CollectionMetrics from its to_json() object (null numbers become NaN). Throws naming `where`
/// when "collection" is missing.
CollectionMetrics collection_metrics_from_json(const Json& v, const std::string& where);

/// Per-graph metrics from a document with a "graphs" array of to_json(GraphMetrics) objects
/// (`segrank evaluate --json`); empty when there is no such array. Throws naming `where` when an
/// item has no "graph" name.
std::vector<GraphMetrics> graph_metrics_from_json(const Json& doc, const std::string& where);

/// Reads a `segrank leaderboard` table: --out-csv output (any CSV with a header; quoted fields
/// allowed) or --json output (file name ending in .json). Throws segrank::Error naming the file.
TextTable load_leaderboard_table(const std::filesystem::path& path);

/// A run's config.toml keys that decide its learning rates and logging steps (optim.lr,
/// optim.schedule and optim.warmup_steps cannot change on resume; the train.* keys are those of
/// its last part).
struct RunScheduleConfig {
    LrSchedule lr;  ///< kind, base_lr (optim.lr), warmup_steps (optim.warmup_steps); total unused
    int64_t steps = 0, epochs = 0, eval_every = 0, log_every = 0;  ///< train.*
};

struct ReportOptions {
    std::filesystem::path run_dir;
    std::optional<std::filesystem::path> eval_json;    ///< `segrank evaluate --json` output
    std::optional<std::filesystem::path> leaderboard;  ///< external leaderboard (CSV or JSON)
    /// The run's eval.metric ("kaggle", "kendall", ...; "" when its config.toml is absent): the
    /// range of the selection values in metrics.jsonl and report.json.
    std::string selection_metric;
    /// The run's task (from its config.toml's data.collections or its checkpoint's /extra/task;
    /// nullopt when neither tells): the range of kaggle selections and of each eval result's
    /// collections.
    std::optional<Task> task;
    /// CheckpointReader::parameters_id of run_dir's checkpoints (last, best): an --eval JSON
    /// recording one of them is this run's evaluation, however the run was moved or renamed.
    std::vector<std::string> run_checkpoint_ids;
    /// Notes on run_dir's checkpoints found by the caller (one that is not a readable checkpoint:
    /// "RUN/last.ckpt.h5: not readable as a checkpoint (...), not used"), shown first among the
    /// page's notes.
    std::vector<std::string> checkpoint_notes;
    /// Draw an --eval JSON whose "checkpoint" is not one of run_dir's (eval_checkpoint_mismatch:
    /// e.g. a run copied after it was evaluated) with a note, instead of refusing it.
    bool eval_of_other_run = false;
    /// The run's schedule keys from its config.toml (nullopt when absent): what its metrics.jsonl
    /// lines are held to (check_train_schedule in report/run_checks.h).
    std::optional<RunScheduleConfig> schedule_config;
};

/// One line of a `segrank tune` directory's measurements.jsonl (docs/tune.md#files).
struct TunePoint {
    int64_t line = 0;  ///< 1-based line number in measurements.jsonl
    int64_t round = 0;
    std::optional<int64_t> config;  ///< "config" (index of a recorded config); unset: a searched
                                    ///< config that is no row of the graph file (null)
    double measured_ns = 0.0;       ///< NaN when the measurement failed
    double best_ns = 0.0;           ///< fastest so far, NaN before the first success
    std::string error;              ///< why the measurement failed ("" when it succeeded)
};

/// Everything read from a `segrank tune` directory.
struct TuneRecords {
    std::filesystem::path dir;
    Json tune;                 ///< tune.json
    std::optional<Json> best;  ///< best.json (absent before the first round ends)
    std::vector<TunePoint> points;
    double default_ns = 0.0;  ///< the default's runtime: the round-0 line's (else, when lines
                              ///< were lost, best.json's); NaN when unknown or failed
    std::vector<std::string> notes;  ///< what was missing or skipped, shown in the page
};

/// True when `dir` is a `segrank tune --out` directory: it holds an entry named tune.json (of any
/// type: load_tune_dir names one that is not a regular file), or a tune's measurements.jsonl or
/// best.json and no metrics.jsonl or config.toml of a training run (a tune.json deleted).
bool is_tune_dir(const std::filesystem::path& dir);

/// The tag in the <head> of every page segrank report writes (both kinds), by which a later
/// report recognizes a page it may replace.
inline constexpr std::string_view kReportGeneratorMeta =
    R"(<meta name="generator" content="segrank report">)";

/// True when `head` (a file's first bytes, e.g. 512) is a page segrank report wrote: it holds
/// kReportGeneratorMeta, or (pages written before that tag) starts with the DOCTYPE line and has
/// the title "segrank run report: ..." or "segrank tuning report: ...". A user's own HTML page is
/// not one.
bool is_segrank_report_page(std::string_view head);

/// Reads a tune directory. Throws segrank::Error naming the file (and line) when tune.json is
/// missing or not a JSON object with a "graph" object, or a complete measurements.jsonl line is
/// malformed or lacks "round" / "best_ns"; a torn last line (no line end: a run still measuring)
/// is skipped with a note. best.json is held to the first "measured" lines of measurements.jsonl
/// (the ones it was written after): its "config", "runtime_ns" (and the rows) to the first
/// fastest of them, "default_config" and "default_runtime_ns" to the round-0 line, and
/// "speedup_over_default" to their ratio; a contradiction throws naming best.json, the field and
/// the line. A best.json that counts more measurements than the file holds (lines lost) is not
/// checked, but noted.
TuneRecords load_tune_dir(const std::filesystem::path& dir);

/// The HTML page of a tuning run: a summary (graph, measure, strategy, default and best, speedup,
/// measurements to come within 1 % of the final best), the best-so-far runtime and the speedup
/// over the default against the measurement index (one series per directory: `dir` first, then
/// each of `compare`, e.g. other strategies on the same graph, each with its own default), each
/// measured runtime, and a per-round table of `dir`. Throws segrank::Error from load_tune_dir.
/// `notes`, when given, receives the page's notes (what was missing, skipped or not finite) for
/// the caller to show on the terminal.
std::string render_tune_report_html(const std::filesystem::path& dir,
                                    const std::vector<std::filesystem::path>& compare,
                                    std::vector<std::string>* notes = nullptr);

/// The whole HTML page: header and summary, loss and learning-rate curves, validation metrics per
/// collection over steps (with the random baseline of the run and, when the external leaderboard
/// has a row whose name contains "hwmodel", that row's scores as horizontal reference lines),
/// per-graph Kendall bars (from eval_json, else report.json when it holds "graphs"), the
/// leaderboard of the run's evaluations, the external leaderboard, the effective config. Throws
/// segrank::Error from the loaders above. `notes`, when given, receives the page's notes.
std::string render_report_html(const ReportOptions& opt, std::vector<std::string>* notes = nullptr);

}  // namespace segrank
