// Trainer (docs/architecture.md#the-gst-step, docs/architecture.md#distribution): the step loop
// (sample -> GST forward -> loss -> backward -> allreduce -> clip -> AdamW -> history), evaluation
// with early stopping, best and last checkpoints, exact resume, metrics JSONL and a final report,
// on any Communicator.
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "data/normalizer.h"
#include "eval/metrics.h"
#include "gnn/model.h"
#include "gnn/optim.h"
#include "gst/gst.h"
#include "gst/prepared_graph.h"
#include "sampling/batch_sampler.h"
#include "sampling/config_sampler.h"
#include "segments/history_table.h"
#include "trainer/comm.h"
#include "trainer/config.h"
#include "trainer/config_options.h"
#include "trainer/dataset.h"
#include "trainer/evaluation.h"
#include "trainer/selection.h"

namespace segrank {

/// Rewrites a run's metrics.jsonl for a resume from `step`: keeps the lines whose "step" is <=
/// step, drops later ones (written after the checkpoint, they would repeat), the per-run
/// "random_baseline" summary and unparsable (torn) lines. Returns the number of lines dropped; a
/// missing file is created empty. Throws segrank::Error naming the file when it cannot be written.
/// `last_kept` (when given) receives the largest "step" of the kept lines, 0 when none has one.
int64_t truncate_metrics_jsonl(const std::filesystem::path& file, int64_t step,
                               int64_t* last_kept = nullptr);

/// The note a resume from checkpoint step `step` prints when metrics.jsonl, after
/// truncate_metrics_jsonl, lacks the lines up to that step: its last line with a step is
/// `last_kept` (0: none) and a run logs at least every `interval` steps (train.log_every). Empty
/// when the log reaches within `interval` steps of the checkpoint (a complete log).
std::string missing_history_note(const std::filesystem::path& run_dir, int64_t step,
                                 int64_t last_kept, int64_t interval);

/// The normalizer stored in a checkpoint file. Throws segrank::Error naming the file.
Normalizer load_checkpoint_normalizer(const std::filesystem::path& file);

/// A trained model restored for inference (evaluate, predict, ensembling).
struct LoadedModel {
    RunConfig cfg;  ///< the effective config stored in the checkpoint
    Normalizer normalizer;
    Task task = Task::kLayout;
    std::unique_ptr<Model> model;
    std::filesystem::path file;
    /// CheckpointReader::parameters_id() of `file`: which model, wherever the file is now.
    std::string parameters_id;
};

/// Loads `path`: a checkpoint file, or a run directory (its best.ckpt.h5, else last.ckpt.h5).
/// Throws segrank::Error naming the path when it is missing or not a segrank checkpoint.
LoadedModel load_model(const std::filesystem::path& path);

/// The GST shape of a training visit under `cfg` (segments.max_nodes, segments.fresh, and
/// segments.keep_prob as the recomputed share with history_init = "fresh", else 0), for
/// step_member_costs.
GstVisitShape gst_visit_shape(const RunConfig& cfg);

class Trainer {
public:
    /// Opens the data, fits the normalizer (or restores it from `resume_dir`'s checkpoint), builds
    /// the model and optimizer, broadcasts parameters from rank 0. On resume, before anything is
    /// written: check_resume_start (only operational keys may differ from the checkpoint's config),
    /// the checkpoint's data manifest against the data (check_data_manifest) and a total step count
    /// above the checkpoint step. Then writes the effective config to the run directory (rank 0; on
    /// resume too, so `--resume --set train.steps=...` leaves the config actually used) and, on
    /// resume, drops metrics.jsonl lines after the checkpoint step (truncate_metrics_jsonl). Loads
    /// and checks eval.indices (check_eval_indices). Throws segrank::Error on bad data or config.
    /// `before_first_write` runs on rank 0 once every start-up check passed, just before the first
    /// file of the run is written (segrank train --overwrite removes the old checkpoints there).
    Trainer(const RunConfig& cfg, Communicator& comm,
            std::optional<std::filesystem::path> resume_dir = {},
            std::function<void()> before_first_write = {});
    ~Trainer();

    /// Runs until train.steps / train.epochs / early stopping, then the final evaluation, head
    /// finetuning (segments.finetune_epochs) and the report. Returns the final evaluation.
    EvalResult run();

    /// One optimizer step (public for tests). Returns the global mean loss of the step.
    double step();
    int64_t current_step() const { return step_; }
    Model& model() { return *model_; }
    const Normalizer& normalizer() const { return normalizer_; }
    const Dataset& dataset() const { return *dataset_; }
    HistoryTable& history() { return *history_; }
    /// Evaluates the current parameters on the evaluation graphs.
    EvalResult evaluate();
    /// random_baseline() on the evaluation graphs (10 seeds).
    EvalResult evaluate_random();
    /// Writes <run_dir>/<name>.ckpt.h5 (rank 0 parameters/optimizer, every rank its history shard).
    void save_checkpoint(const std::string& name);

private:
    // The constructor's steps, in order (docs/architecture.md#distribution: every rank runs them
    // identically; rank-agreement checks come before any collective that depends on them).
    /// dataset_, the rank agreement on its graph list and content (data_manifest_), eval.indices.
    void open_dataset();
    /// task_: one task for all training and evaluation graphs, and the keys that need a tile task.
    void check_task();
    /// normalizer_ fitted on the training graphs' node features (identity without data.normalize).
    void fit_normalizer();
    /// model_ with parameters initialized from train.seed, optim_ (AdamW).
    void build_model_and_optimizer();
    /// batches_, owners_ of the training graphs, total_steps_ and the learning-rate schedule_.
    void plan_steps();
    /// gst_, prep_ (partition cache in the run directory) and the history_ table.
    void init_segment_state();
    /// --resume: restores the checkpoint and, on rank 0, rewrites config.toml and metrics.jsonl.
    void resume_from(const std::filesystem::path& ckpt,
                     const std::function<void()>& before_first_write);
    /// A fresh run: rank 0's parameters to every rank; rank 0 creates the run directory with
    /// config.toml and an empty metrics.jsonl.
    void start_fresh(const std::function<void()>& before_first_write);

    // run()'s steps.
    /// Rank 0: the "segrank train: ..." lines before the first step (resume, data, model, shares).
    void print_run_start() const;
    struct LogWindow;
    /// One "train" line of metrics.jsonl over the steps of `w`. Collective (allreduces).
    void log_train_window(const LogWindow& w, double steps_per_s);
    /// Which checkpoint an evaluation writes first (each call site keeps its order).
    enum class SaveOrder { kBestThenLast, kLastThenBest };
    struct Selected {
        EvalResult ev;
        SelectionDecision decision;
    };
    /// evaluate() -> a `phase` line in metrics.jsonl -> decide_selection(rule) -> the "best"
    /// checkpoint when improved and the "last" checkpoint, in `order`. Collective.
    Selected evaluate_and_select(const char* phase, const SelectionRule& rule, SaveOrder order);
    /// Rank 0: the evaluation tables, the summary line and report.json.
    void write_final_report(const EvalResult& final_ev, const EvalResult& random_ev,
                            bool stopped_early, double train_rate);

    const PreparedGraph& train_graph(int64_t id);
    /// One step's work on the members of `global` under dist.slice_configs (several ranks): this
    /// rank's config slices forward, every slice's scores summed over ranks (collective), each
    /// slice's graph loss on the whole graph's scores, its backward. Returns the scaled loss of the
    /// members whose first slice is this rank's; `trained` receives the graph ids of this rank's
    /// slices (for the history exchange), `wait` the wall and CPU seconds spent in the score
    /// exchange (not work: a rank waits there for the slowest forward). Throws segrank::Error as
    /// gst_train_graph.
    double sliced_step_work(std::span<const int64_t> global, double scale,
                            const std::string& oom_settings, std::vector<int64_t>& trained,
                            std::pair<double, double>& wait);
    /// The same under dist.segment_units (docs/distributed.md#segment-units): this rank's segment
    /// units forward (trainer/trainer_segments.cpp), every member's summed fresh and stale segment
    /// values over ranks (collective), the loss of each member on every rank holding a fresh unit
    /// of it, the backward of its fresh units. Same outputs and errors as sliced_step_work.
    double segment_step_work(std::span<const int64_t> global, double scale,
                             const std::string& oom_settings, std::vector<int64_t>& trained,
                             std::pair<double, double>& wait);
    void load_checkpoint(const std::filesystem::path& file);
    /// --resume: the checkpoint's data manifest against the current dataset (check_data_manifest);
    /// a checkpoint without one (older segrank) gets a warning on stderr.
    void check_checkpoint_data(const std::filesystem::path& file);
    void log_jsonl(const Json& line);
    void finetune_head();

    RunConfig cfg_;
    Communicator& comm_;
    std::filesystem::path run_dir_;
    std::unique_ptr<Dataset> dataset_;
    std::string data_manifest_;  ///< data_manifest of dataset_, read once at construction
    /// eval_indices_content_digest at construction: stored in each checkpoint, so a resume can
    /// tell when the evaluation set its selections were measured on changed.
    std::string eval_indices_content_;
    /// That digest stored in the checkpoint a resume loaded (nullopt: none, an older checkpoint).
    std::optional<std::string> resumed_eval_indices_;
    Normalizer normalizer_;
    Task task_ = Task::kLayout;
    std::unique_ptr<Model> model_;
    std::unique_ptr<AdamW> optim_;
    LrSchedule schedule_;
    std::unique_ptr<BatchSampler> batches_;
    /// Owners of the training graphs (dist.ownership): batch members, prepared graphs, history
    /// shards and their redistribution on resume.
    Ownership owners_;
    std::unique_ptr<HistoryTable> history_;
    GstOptions gst_;
    PrepareOptions prep_;
    std::map<int64_t, std::unique_ptr<PreparedGraph>> train_cache_;
    std::map<int64_t, std::unique_ptr<ConfigSampler>> samplers_;
    std::map<int64_t, std::unique_ptr<PreparedGraph>> eval_cache_;
    int64_t step_ = 0;
    int64_t total_steps_ = 0;
    SelectionState sel_;  ///< best evaluation and patience, updated only by decide_selection()
    double last_loss_ = 0.0;
    /// Time the last step() spent on the members each rank owns (before the gradient allreduce):
    /// this rank's wall and process CPU seconds, and the CPU seconds' mean and max over ranks.
    struct BusyTime {
        double wall = 0.0, cpu = 0.0, cpu_mean = 0.0, cpu_max = 0.0;
    };
    BusyTime last_busy_;
    bool resumed_ = false;  ///< constructed with a resume_dir (run() prints "resuming from step N")
};

}  // namespace segrank
