// Trainer::run: the loop with logging, evaluation, early stopping, checkpoints, head finetuning and
// the final report.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "gnn/core/check.h"
#include "gnn/core/parallel.h"
#include "gnn/ops/matmul.h"
#include "sampling/step_balance.h"
#include "trainer/trainer.h"
#include "util/atomic_file.h"
#include "util/progress.h"
#include "util/rss.h"
#include "util/text_table.h"

namespace segrank {

namespace {

// The loss on the progress line (8 significant digits; the JSON lines carry the exact values).
std::string fmt(double v) {
    if (!std::isfinite(v)) return "null";
    std::ostringstream os;
    os.precision(8);
    os << v;
    return os.str();
}

// A training graph with one usable config adds nothing to any loss: say which (at most 5 named).
void warn_single_config_graphs(const std::vector<std::string>& graphs) {
    if (graphs.empty()) return;
    std::string names;
    for (size_t i = 0; i < graphs.size() && i < 5; ++i) names += (i ? ", " : "") + graphs[i];
    if (graphs.size() > 5) names += str(" and ", graphs.size() - 5, " more");
    std::fprintf(stderr,
                 "segrank train: warning: %zu training graph(s) with fewer than 2 configs add no "
                 "pair to rank and nothing to the loss: %s\n",
                 graphs.size(), names.c_str());
}

}  // namespace

GstVisitShape gst_visit_shape(const RunConfig& cfg) {
    GstVisitShape shape;
    shape.max_nodes = cfg.segments.max_nodes;
    shape.fresh = cfg.segments.fresh;
    shape.stale_forward =
        cfg.segments.history_init == HistoryInit::kFresh ? cfg.segments.keep_prob : 0.0;
    return shape;
}

void Trainer::print_run_start() const {
    if (resumed_)
        std::printf("segrank train: resuming from step %lld (checkpoint %s)\n",
                    static_cast<long long>(step_), (run_dir_ / "last.ckpt.h5").string().c_str());
    std::printf("segrank train: %s\n", dataset_->describe().c_str());
    warn_single_config_graphs(dataset_->single_config_graphs());
    std::printf(
        "segrank train: %s model, %lld parameters, %lld features after normalization%s%s, "
        "%d rank(s) x %d "
        "thread(s), %s products, %lld steps (%lld per epoch), run dir %s\n",
        task_ == Task::kTile ? "tile" : "layout",
        static_cast<long long>(model_->params().num_parameters()),
        static_cast<long long>(normalizer_.output_dim()),
        model_->config().loop_depth ? " + the loop depth" : "",
        model_->config().trip_counts ? " + the loop trip counts" : "", comm_.size(), num_threads(),
        std::string(to_string(matmul_precision())).c_str(), static_cast<long long>(total_steps_),
        static_cast<long long>(batches_->steps_per_epoch()), run_dir_.string().c_str());
    if (comm_.size() > 1 && owners_.mode() == OwnershipMode::kPerStep) {
        // No fixed shares: the step-cost model's per-step efficiency over this run's schedule.
        const auto visit = train_member_costs(dataset_->train(), cfg_.sampling.configs);
        const auto work =
            step_member_costs(dataset_->train(), cfg_.sampling.configs, gst_visit_shape(cfg_));
        const auto model = [&](OwnershipMode m) {
            const Ownership owners = training_ownership(m, visit, work, comm_.size());
            return format_fixed(
                predict_step_balance(*batches_, owners, work, step_, total_steps_).efficiency(), 3,
                "nan");
        };
        std::string per_step = model(OwnershipMode::kPerStep);
        if (cfg_.dist.slice_configs) {
            const StepBalance b = predict_sliced_step_balance(
                *batches_, training_ownership(OwnershipMode::kPerStep, visit, work, comm_.size()),
                work,
                step_config_positions(dataset_->train(), cfg_.sampling.configs,
                                      cfg_.sampling.config_pool),
                step_, total_steps_);
            per_step = format_fixed(b.efficiency(), 3, "nan") + ", scaling efficiency " +
                       format_fixed(b.scaling_efficiency(), 3, "nan");
        }
        if (cfg_.dist.segment_units) {
            std::vector<int64_t> nodes(dataset_->train().size(), 0);
            for (const auto& e : dataset_->train())
                nodes.at(static_cast<size_t>(e.id)) = e.info.num_nodes;
            const StepBalance b = predict_segment_step_balance(
                *batches_, comm_.size(), nodes,
                step_config_positions(dataset_->train(), cfg_.sampling.configs,
                                      cfg_.sampling.config_pool),
                gst_visit_shape(cfg_), cfg_.segments.keep_prob,
                static_cast<uint64_t>(cfg_.sampling.seed), step_, total_steps_);
            per_step = format_fixed(b.efficiency(), 3, "nan") + ", scaling efficiency " +
                       format_fixed(b.scaling_efficiency(), 3, "nan");
        }
        std::printf(
            "segrank train: dist.ownership = per_step, each step's graphs split by "
            "longest-processing-time%s; modelled step efficiency %s (modulo %s, balanced %s)\n",
            cfg_.dist.segment_units   ? " in GST segments (dist.segment_units)"
            : cfg_.dist.slice_configs ? " in config slices (dist.slice_configs)"
                                      : "",
            per_step.c_str(), model(OwnershipMode::kModulo).c_str(),
            model(OwnershipMode::kBalanced).c_str());
    } else if (comm_.size() > 1) {
        // Share of the training work (nodes x configs per visit) each rank owns.
        const auto costs = train_member_costs(dataset_->train(), cfg_.sampling.configs);
        const auto totals = owners_.rank_totals(costs);
        double all = 0.0;
        for (int64_t t : totals) all += static_cast<double>(t);
        std::string shares;
        for (int64_t t : totals)
            shares += str(shares.empty() ? "" : " / ",
                          format_fixed(all > 0 ? static_cast<double>(t) / all : 0.0, 3, "nan"));
        std::printf("segrank train: dist.ownership = %s, training work per rank %s\n",
                    std::string(to_string(owners_.mode())).c_str(), shares.c_str());
    }
    std::fflush(stdout);
}

/// The steps since the last "train" line of metrics.jsonl.
struct Trainer::LogWindow {
    double loss = 0.0;  ///< sum of the steps' global mean losses
    int64_t steps = 0;
    double step_seconds = 0.0;  ///< wall time inside step() (no eval/checkpoint/log)
    // Of which on this rank's own members, before the gradient allreduce: wall and CPU seconds,
    // and the per-step mean and max over ranks of the CPU seconds.
    double busy_seconds = 0.0, cpu_seconds = 0.0, cpu_mean = 0.0, cpu_max = 0.0;
};

void Trainer::log_train_window(const LogWindow& w, double steps_per_s) {
    const auto hs = history_->stats();
    const auto n = static_cast<double>(w.steps);
    log_jsonl({{"phase", "train"},
               {"step", step_},
               {"epoch", batches_->position(step_ - 1).epoch},
               {"loss", w.loss / n},
               {"lr", schedule_.at(step_ - 1)},
               {"steps_per_s", steps_per_s},
               {"step_wall_s", w.step_seconds / n},
               {"step_busy_s",
                comm_.allreduce_sum(w.busy_seconds) / static_cast<double>(w.steps * comm_.size())},
               {"step_cpu_s", w.cpu_mean / n},
               {"step_cpu_max_s", w.cpu_max / n},
               {"rank_cpu_max_s", comm_.allreduce_max(w.cpu_seconds) / n},
               {"peak_rss_mb", comm_.allreduce_max(peak_rss_mb())},
               {"history_entries", hs.entries},
               {"history_hits", hs.hits},
               {"history_misses", hs.misses}});
}

Trainer::Selected Trainer::evaluate_and_select(const char* phase, const SelectionRule& rule,
                                               SaveOrder order) {
    Selected r{evaluate(), {}};
    log_jsonl({{"phase", phase},
               {"step", step_},
               {"selection", r.ev.selection},
               {"metrics", r.ev.to_json()}});
    r.decision = decide_selection(comm_, sel_, r.ev.selection, step_, rule);
    if (order == SaveOrder::kLastThenBest) save_checkpoint("last");
    if (r.decision.improved) save_checkpoint("best");
    if (order == SaveOrder::kBestThenLast) save_checkpoint("last");
    return r;
}

void Trainer::write_final_report(const EvalResult& final_ev, const EvalResult& random_ev,
                                 bool stopped_early, double train_rate) {
    print_eval_table(final_ev, "segrank train: held-out metrics of the final model");
    print_eval_table(random_ev,
                     "segrank train: random-ranking baseline on the same configs (mean of 10 "
                     "seeds)");
    std::printf(
        "segrank train: %lld steps%s, %.2f steps/s, best %s %.4f at step %lld; checkpoints "
        "%s/{best,last}.ckpt.h5\n",
        static_cast<long long>(step_), stopped_early ? " (stopped early)" : "", train_rate,
        std::string(cfg::to_string(cfg_.eval.metric)).c_str(), sel_.best,
        static_cast<long long>(sel_.best_step), run_dir_.string().c_str());
    const Json report = {{"steps", step_},
                         {"stopped_early", stopped_early},
                         {"steps_per_s", train_rate},
                         {"best_step", sel_.best_step},
                         {"best_selection", sel_.best},
                         {"peak_rss_mb", peak_rss_mb()},
                         {"world_size", comm_.size()},
                         {"final", final_ev.to_json()},
                         {"random_baseline", random_ev.to_json()}};
    write_file_atomically(run_dir_ / "report.json", dump_json(report) + "\n");
}

EvalResult Trainer::run() {
    const bool root = comm_.rank() == 0;
    if (root) print_run_start();
    // What this part of the run (a start, or a resume: train.steps, epochs and the intervals may
    // change) logs by: `segrank report` holds the lines after it to this schedule.
    log_jsonl({{"phase", "schedule"},
               {"step", step_},
               {"total_steps", total_steps_},
               {"warmup_steps", schedule_.warmup_steps},
               {"eval_every", cfg_.train.eval_every},
               {"log_every", cfg_.train.log_every}});
    Progress progress("train", total_steps_, root && cfg_.train.progress, step_);
    LogWindow window;
    bool stopped_early = false;
    const bool later_on_ties = cfg_.eval.select_later_on_ties;
    while (step_ < total_steps_) {
        const auto t0 = std::chrono::steady_clock::now();
        const double loss = step();
        window.step_seconds +=
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        window.busy_seconds += last_busy_.wall;
        window.cpu_seconds += last_busy_.cpu;
        window.cpu_mean += last_busy_.cpu_mean;
        window.cpu_max += last_busy_.cpu_max;
        window.loss += loss;
        ++window.steps;
        progress.update(step_, str("loss ", fmt(loss)));
        if (cfg_.train.log_every > 0 && step_ % cfg_.train.log_every == 0) {
            log_train_window(window, progress.rate());
            window = LogWindow{};
        }
        const bool eval_now =
            cfg_.train.eval_every > 0 && step_ % cfg_.train.eval_every == 0 && step_ < total_steps_;
        if (eval_now) {
            const SelectionRule rule{.patience = cfg_.train.patience,
                                     .count_patience = true,
                                     .later_on_ties = later_on_ties};
            if (evaluate_and_select("eval", rule, SaveOrder::kBestThenLast).decision.stop) {
                stopped_early = true;
                break;
            }
        } else if (cfg_.train.checkpoint_every > 0 && step_ % cfg_.train.checkpoint_every == 0) {
            save_checkpoint("last");
        }
    }
    progress.finish();
    const double train_rate = progress.rate();

    EvalResult final_ev =
        evaluate_and_select("eval", {.first_is_best = true, .later_on_ties = later_on_ties},
                            SaveOrder::kBestThenLast)
            .ev;
    if (cfg_.segments.finetune_epochs > 0) {
        finetune_head();
        final_ev = evaluate_and_select("finetune_eval", {.later_on_ties = later_on_ties},
                                       SaveOrder::kLastThenBest)
                       .ev;
    }

    EvalResult random_ev = evaluate_random();
    log_jsonl({{"phase", "random_baseline"}, {"seeds", 10}, {"metrics", random_ev.to_json()}});
    if (root) write_final_report(final_ev, random_ev, stopped_early, train_rate);
    return final_ev;
}

void Trainer::finetune_head() {
    // Prediction Head Finetuning (docs/gst.md#head-finetuning): every segment readout recomputed
    // fresh for the training configs, then only the head trains. Non-head parameters are restored
    // after each AdamW step (decoupled weight decay and old moments would otherwise move them).
    std::vector<std::pair<int64_t, int64_t>> head_ranges;
    for (const auto& r : model_->params().refs())
        if (r.name.rfind("head", 0) == 0)
            head_ranges.emplace_back(r.offset, r.size());  // head1.*, head2.*
    auto values = model_->params().values();
    std::vector<float> frozen(values.begin(), values.end());
    auto is_head = [&](int64_t i) {
        for (auto [o, n] : head_ranges)
            if (i >= o && i < o + n) return true;
        return false;
    };
    std::vector<uint8_t> head_mask(values.size());
    for (size_t i = 0; i < values.size(); ++i)
        head_mask[i] = is_head(static_cast<int64_t>(i)) ? 1 : 0;

    const bool sum = gst_.aggregate == SegmentAggregate::kScoreSum;
    const int64_t steps = cfg_.segments.finetune_epochs * batches_->steps_per_epoch();
    Progress progress("finetune", steps, comm_.rank() == 0 && cfg_.train.progress);
    for (int64_t s = 0; s < steps; ++s) {
        const int64_t st = step_;
        const auto global = batches_->global_batch(st);
        const double scale = 1.0 / static_cast<double>(global.size());
        model_->params().zero_grads();
        double loss = 0.0;
        for (int64_t id : batches_->local_batch(st, comm_.rank(), owners_)) {
            const PreparedGraph& g = train_graph(id);
            ConfigSet cs = samplers_.at(id)->sample(st);
            std::vector<Tensor> rs = segment_readouts(*model_, g, cs.indices, gst_);
            if (rs.empty()) continue;
            const auto k = static_cast<int64_t>(cs.indices.size());
            Tensor tile, tile_cost;
            ConstMatrixView tile_cfg;
            if (g.task == Task::kTile) {
                tile = tile_rows(g, load_config_batch(g, cs.indices), cs.indices);
                tile_cfg = tile.cview();
                tile_cost = tile_cost_rows(g, cs.indices);
            }
            std::vector<float> dscores(static_cast<size_t>(k), 0.0f);
            const std::vector<float> prior = prior_values(*model_, g, cs.indices);
            if (sum) {
                std::vector<HeadSaved> hs(rs.size());
                Tensor scores(k);
                for (size_t j = 0; j < rs.size(); ++j) {
                    Tensor sc = model_->head(rs[j].cview(), tile_cfg, &hs[j], tile_cost.cview());
                    for (int64_t i = 0; i < k; ++i) scores[i] += sc[i];
                }
                model_->add_prior(scores.span(), prior);  // once per graph; w stays frozen
                loss += compute_loss(gst_.loss_terms, gst_.loss_options, scores.span(), cs.targets,
                                     dscores, scale);
                for (size_t j = 0; j < rs.size(); ++j)
                    model_->head_backward(dscores, hs[j], MatrixView{});
            } else {
                Tensor mean(k, rs[0].cols());
                for (const auto& r : rs)
                    for (int64_t i = 0; i < r.size(); ++i)
                        mean[i] += r[i] / static_cast<float>(rs.size());
                HeadSaved hs;
                Tensor scores = model_->head(mean.cview(), tile_cfg, &hs, tile_cost.cview());
                model_->add_prior(scores.span(), prior);
                loss += compute_loss(gst_.loss_terms, gst_.loss_options, scores.span(), cs.targets,
                                     dscores, scale);
                model_->head_backward(dscores, hs, MatrixView{});
            }
        }
        comm_.allreduce_sum(model_->params().grads());
        loss = comm_.allreduce_sum(loss);
        const double norm = clip_grad_norm(model_->params(), cfg_.optim.clip_norm);
        SEGRANK_CHECK(std::isfinite(norm) && std::isfinite(loss),
                      "non-finite loss or gradient in head finetuning at step ", st,
                      "; no checkpoint written", gst_.nonfinite_hint);
        optim_->step(model_->params(), static_cast<float>(cfg_.optim.lr));
        for (size_t i = 0; i < values.size(); ++i)
            if (!head_mask[i]) values[i] = frozen[i];
        ++step_;
        progress.update(s + 1, str("loss ", fmt(loss)));
        if (cfg_.train.log_every > 0 && (s + 1) % cfg_.train.log_every == 0)
            log_jsonl({{"phase", "finetune"}, {"step", step_}, {"loss", loss}});
    }
    progress.finish();
}

}  // namespace segrank
