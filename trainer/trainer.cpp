// Trainer: setup in named steps (data, task checks, normalizer, model, step plan, segment state,
// run directory), the training step and the in-training evaluation.
#include "trainer/trainer.h"

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <map>
#include <sstream>

#include "data/graph_memory.h"
#include "gnn/core/check.h"
#include "gnn/core/parallel.h"
#include "sampling/dedupe.h"
#include "sampling/dedupe_stream.h"
#include "sampling/step_balance.h"
#include "trainer/config_task.h"
#include "trainer/history_share.h"
#include "trainer/rank_agreement.h"
#include "trainer/run_dir.h"
#include "util/atomic_file.h"
#include "util/progress.h"

namespace segrank {

EvalResult Trainer::evaluate_random() {
    return random_baseline(*model_, normalizer_, cfg_, dataset_->eval(), comm_, &eval_cache_, 10);
}

Trainer::~Trainer() = default;

namespace {

// Under a shift-invariant (ranking-only) loss the head's output bias ("head2.bias", [1, 1]) has an
// exactly zero gradient; what arrives instead is rounding noise (~1e-10) that AdamW's normalization
// turns into steps of about lr in a random direction. Those steps shift every score equally, but
// HistoryTable entries keep the bias of the step that wrote them, so the noise leaks into the loss
// through stale segments and makes results depend on the world size and thread count. Zeroed.
void zero_output_bias_grad(ParamStore& params) {
    for (const auto& r : params.refs())
        if (r.name == "head2.bias") std::fill_n(params.grads().begin() + r.offset, r.size(), 0.0f);
}

// One line per training and evaluation graph: role, collection, name, sizes, held-out configs.
std::string graph_manifest(const Dataset& ds) {
    std::string out;
    for (const auto* role : {&ds.train(), &ds.eval()})
        for (const GraphEntry& e : *role)
            out += str(role == &ds.train() ? "train " : "eval ", e.collection.name(), " ", e.name,
                       " nodes ", e.info.num_nodes, " edges ", e.info.num_edges, " configs ",
                       e.info.num_configs, " config_nodes ", e.info.num_config_nodes, " using ",
                       e.configs.size(), "\n");
    return out;
}

}  // namespace

Trainer::Trainer(const RunConfig& cfg, Communicator& comm,
                 std::optional<std::filesystem::path> resume_dir,
                 std::function<void()> before_first_write)
    : cfg_(cfg), comm_(comm), run_dir_(cfg.train.run_dir) {
    // Before any collective whose length depends on the config (a stale host would hang or
    // corrupt memory there).
    check_ranks_agree(comm_, "effective config",
                      dump_config(cfg_) + "\n--resume " +
                          (resume_dir ? resume_dir->string() : std::string("(none)")) + "\n");
    if (resume_dir) {
        run_dir_ = *resume_dir;
        check_resume_start(cfg_,
                           run_dir_);  // config keys and train.steps, before anything is written
    }
    apply_model_precision(cfg_, comm_.rank() == 0);
    open_dataset();
    check_task();
    check_eval_indices(cfg_, dataset_->eval());  // fail now, not after training (first evaluation)
    const std::filesystem::path ckpt = run_dir_ / "last.ckpt.h5";
    if (resume_dir) {
        SEGRANK_CHECK(std::filesystem::exists(ckpt), "--resume ", resume_dir->string(),
                      ": no checkpoint '", ckpt.string(), "'");
        normalizer_ = load_checkpoint_normalizer(ckpt);
        check_checkpoint_data(ckpt);
    } else {
        fit_normalizer();
    }
    build_model_and_optimizer();
    plan_steps();
    init_segment_state();
    if (resume_dir)
        resume_from(ckpt, before_first_write);
    else
        start_fresh(before_first_write);
    comm_.barrier();
}

namespace {

// Notes on stderr each evaluation graph whose content (the data manifest's digests of its arrays,
// run_dir.h content_columns) equals a training graph's under another name: validation would score
// a graph the model trains on (the same name in both is refused when the splits are read).
void note_eval_copies_of_training_graphs(const std::string& manifest) {
    std::map<std::string, std::string> train;  // digest and sizes -> "name (collection)"
    std::istringstream in(manifest);
    int noted = 0;
    for (std::string line; std::getline(in, line);) {
        std::vector<std::string> f;
        std::istringstream cells(line);
        for (std::string c; std::getline(cells, c, '\t');) f.push_back(c);
        if (f.size() < 7) continue;
        std::string key = f[3] + "\t" + f[4] + "\t" + f[5];
        for (size_t c = 6; c < f.size(); ++c) key += "\t" + f[c];
        const std::string who = str("'", f[2], "' (", f[1], ")");
        if (f[0] == "train") {
            train.emplace(key, who);
        } else if (const auto it = train.find(key);
                   it != train.end() && it->second != who && noted++ < 5) {
            std::fprintf(stderr,
                         "segrank train: note: evaluation graph %s holds the same data as training "
                         "graph %s (the same features, edges, config rows and runtimes): the "
                         "evaluations score a graph the model trains on\n",
                         who.c_str(), it->second.c_str());
        }
    }
}

}  // namespace

void Trainer::open_dataset() {
    dataset_ = std::make_unique<Dataset>(cfg_.data, static_cast<uint64_t>(cfg_.sampling.seed));
    check_ranks_agree(comm_, "list of graphs", graph_manifest(*dataset_));
    // One pass over everything each graph holds (node features, opcodes, edges, config rows,
    // config node ids, runtimes), before the normalizer: ranks reading other bytes for a graph
    // would fit other normalizers and build models of other sizes (heap corruption in the
    // collectives) or silently train on different data.
    data_manifest_ = data_manifest(dataset_->train(), dataset_->eval());
    if (comm_.rank() == 0) note_eval_copies_of_training_graphs(data_manifest_);
    check_ranks_agree(comm_,
                      "content of the graphs (data manifest: sizes, then the digests of the config "
                      "rows with runtimes and of node_feat, node_opcode, edge_index, "
                      "node_config_ids, node_splits)",
                      data_manifest_);
    check_ranks_agree(comm_, "eval.indices file", eval_indices_digest(cfg_));
    eval_indices_content_ = eval_indices_content_digest(cfg_);
}

void Trainer::check_task() {
    std::vector<CollectionId> train;
    for (const auto& e : dataset_->train()) train.push_back(e.collection);
    task_ = check_one_task(cfg_, train);
    for (const auto& e : dataset_->eval())
        SEGRANK_CHECK(e.collection.task == task_, "data.collections: evaluation graph '", e.name,
                      "' of ", e.collection.name(), " has another task than the training graphs");
}

void Trainer::fit_normalizer() {
    if (cfg_.data.normalize) {
        NormalizerFitter fitter(kNodeFeatDim);
        for (const auto& e : dataset_->train()) add_node_features(fitter, e);  // chunked for HDF5
        normalizer_ = fitter.finish();
    } else {
        std::vector<int32_t> cols(kNodeFeatDim);
        for (int i = 0; i < kNodeFeatDim; ++i) cols[static_cast<size_t>(i)] = i;
        normalizer_ =
            Normalizer::from_vectors(kNodeFeatDim, cols, std::vector<double>(kNodeFeatDim, 0.0),
                                     std::vector<double>(kNodeFeatDim, 1.0), "identity normalizer");
    }
}

namespace {

// "out of memory while building the model (N parameters, M MiB with AdamW's state): ...; its memory
// grows with model.hidden = H and model.layers = L; ..." (docs/config.md#out-of-memory). `floats`
// is the parameter arena's size, or < 0 when unknown.
std::string model_oom_message(const RunConfig& cfg, int64_t floats) {
    std::string size;
    // Values, gradients and AdamW's two moments: four fp32 arenas.
    if (floats >= 0)
        size = str(" (", floats, " parameters, ", (floats * 16 + (1 << 20) - 1) >> 20,
                   " MiB with gradients and AdamW's moments)");
    return str("out of memory while building the model", size,
               ": an allocation failed; its memory grows with model.hidden = ", cfg.model.hidden,
               " and model.layers = ", cfg.model.layers,
               "; lower them or give the process more memory");
}

}  // namespace

void Trainer::build_model_and_optimizer() {
    const ModelConfig mc = model_config_from(cfg_, task_, normalizer_.output_dim());
    check_model_fits_memory(
        mc, str("model.hidden = ", cfg_.model.hidden, " and model.layers = ", cfg_.model.layers));
    try {
        model_ = std::make_unique<Model>(mc);
        model_->params().initialize(static_cast<uint64_t>(cfg_.train.seed));
        AdamWConfig ac;
        ac.beta1 = static_cast<float>(cfg_.optim.beta1);
        ac.beta2 = static_cast<float>(cfg_.optim.beta2);
        ac.eps = static_cast<float>(cfg_.optim.eps);
        ac.weight_decay = static_cast<float>(cfg_.optim.weight_decay);
        optim_ = std::make_unique<AdamW>(model_->params(), ac);
    } catch (const ParamArenaOutOfMemory& e) {
        throw Error(model_oom_message(cfg_, e.floats()));
    } catch (const std::bad_alloc&) {
        throw Error(model_oom_message(cfg_, model_ ? model_->params().total_size() : -1));
    }
}

void Trainer::plan_steps() {
    const auto& train = dataset_->train();
    std::vector<int64_t> ids;
    for (const auto& e : train) ids.push_back(e.id);
    batches_ = std::make_unique<BatchSampler>(ids, cfg_.sampling.batch_graphs,
                                              static_cast<uint64_t>(cfg_.sampling.seed));
    // From the sizes every rank has agreed on (graph_manifest): the same map on every rank.
    owners_ = training_ownership(
        cfg_.dist.ownership, train_member_costs(train, cfg_.sampling.configs),
        step_member_costs(train, cfg_.sampling.configs, gst_visit_shape(cfg_)), comm_.size());
    total_steps_ = cfg_.train.steps;
    if (cfg_.train.epochs > 0) {
        const int64_t by_epochs = cfg_.train.epochs * batches_->steps_per_epoch();
        total_steps_ = total_steps_ > 0 ? std::min(total_steps_, by_epochs) : by_epochs;
    }
    SEGRANK_CHECK(total_steps_ > 0, "train.steps and train.epochs are both 0: nothing to train");
    SEGRANK_CHECK(total_steps_ <= 2147483647, "train.epochs = ", cfg_.train.epochs, ": ",
                  cfg_.train.epochs, " epochs of ", batches_->steps_per_epoch(), " steps are ",
                  total_steps_,
                  " steps, more than 2147483647 (the steps a run records, train.steps' bound): "
                  "give fewer epochs or a train.steps limit");
    schedule_.kind = cfg_.optim.schedule;
    schedule_.base_lr = cfg_.optim.lr;
    schedule_.warmup_steps =
        std::min<int64_t>(cfg_.optim.warmup_steps, std::max<int64_t>(0, total_steps_ - 1));
    schedule_.total_steps = total_steps_;
}

void Trainer::init_segment_state() {
    gst_ = gst_options_from(cfg_);
    prep_ = prepare_options_from(cfg_);
    prep_.partition_cache_dir = run_dir_ / "partitions";
    const int32_t width = gst_.aggregate == SegmentAggregate::kScoreSum
                              ? 1
                              : static_cast<int32_t>(model_->config().readout_width());
    history_ = std::make_unique<HistoryTable>(
        width, HistoryTable::bytes_from_mb(static_cast<double>(cfg_.segments.history_max_mb)));
}

void Trainer::resume_from(const std::filesystem::path& ckpt,
                          const std::function<void()>& before_first_write) {
    load_checkpoint(ckpt);
    SEGRANK_CHECK(total_steps_ > step_, "--resume ", run_dir_.string(),
                  ": the checkpoint is at step ", step_, " and the run ends at step ", total_steps_,
                  " (train.steps = ", cfg_.train.steps, ", train.epochs = ", cfg_.train.epochs,
                  "), so there is nothing left to train; raise train.steps",
                  cfg_.train.epochs > 0 ? " or train.epochs" : "");
    resumed_ = true;
    if (comm_.rank() == 0) {
        if (before_first_write) before_first_write();
        save_config(cfg_, run_dir_ / "config.toml");  // the effective config, with this run's --set
        int64_t last_kept = 0;
        truncate_metrics_jsonl(run_dir_ / "metrics.jsonl", step_, &last_kept);
        const std::string note =
            missing_history_note(run_dir_, step_, last_kept, cfg_.train.log_every);
        if (!note.empty()) std::fprintf(stderr, "%s\n", note.c_str());
        if (resumed_eval_indices_ && *resumed_eval_indices_ != eval_indices_content_)
            std::fprintf(
                stderr,
                "segrank train: note: --resume %s: the evaluation set changed since the "
                "checkpoint (eval.indices: %s then, %s now): the selections logged up to step "
                "%lld, and the best checkpoint (step %lld) they chose, were measured on other "
                "configs than the evaluations from here on\n",
                run_dir_.string().c_str(), resumed_eval_indices_->c_str(),
                cfg_.eval.indices.empty()
                    ? "(none)"
                    : (cfg_.eval.indices + " " + eval_indices_content_).c_str(),
                static_cast<long long>(step_), static_cast<long long>(sel_.best_step));
    }
}

void Trainer::start_fresh(const std::function<void()>& before_first_write) {
    comm_.broadcast(model_->params().values(), 0);
    if (comm_.rank() == 0) {
        if (before_first_write) before_first_write();
        std::filesystem::create_directories(run_dir_);
        save_config(cfg_, run_dir_ / "config.toml");
        write_file_atomically(run_dir_ / "metrics.jsonl", "");
    }
}

const PreparedGraph& Trainer::train_graph(int64_t id) {
    auto it = train_cache_.find(id);
    if (it != train_cache_.end()) return *it->second;
    const GraphEntry& e = dataset_->train()[static_cast<size_t>(id)];
    auto pg = prepare_graph(e, normalizer_, *model_, prep_);
    // Training candidates: this role's configs, duplicates collapsed (sampling.dedupe).
    const DedupeMode mode = cfg_.sampling.dedupe;
    // Groups of identical rows, hashed chunk by chunk from the graph's source (memory O(chunk +
    // c)).
    std::vector<int64_t> groups;
    if (mode == DedupeMode::kKeep) {
        groups.resize(static_cast<size_t>(pg->num_configs));  // unused by kKeep
    } else {
        groups = config_groups_streamed(*pg->source, pg->source_index, pg->num_configs);
    }
    ConfigSet set = dedupe_by_groups(groups, pg->configs, pg->targets, mode);
    ConfigSamplerOptions so;
    so.configs = cfg_.sampling.configs;
    so.pool = cfg_.sampling.config_pool;
    so.seed = static_cast<uint64_t>(cfg_.sampling.seed);
    so.strategy = cfg_.sampling.strategy;
    samplers_[id] = std::make_unique<ConfigSampler>(so, id, std::move(set));
    return *train_cache_.emplace(id, std::move(pg)).first->second;
}

double Trainer::step() {
    inject_failure_if_requested(cfg_.dist.fail_rank, cfg_.dist.fail_step, comm_.rank(), step_);
    const auto global = batches_->global_batch(step_);
    const auto local = batches_->local_batch(step_, comm_.rank(), owners_);
    const double scale = 1.0 / static_cast<double>(global.size());
    model_->params().zero_grads();
    double loss = 0.0;
    const auto t0 = std::chrono::steady_clock::now();
    const std::clock_t c0 = std::clock();
    const std::string oom_settings = graph_memory_settings(cfg_, false);  // once, not per graph
    // dist.slice_configs: the step's graphs cut into config slices over all ranks.
    // dist.segment_units: the step's GST segments over all ranks.
    const bool segmented = cfg_.dist.segment_units && comm_.size() > 1;
    const bool sliced = (cfg_.dist.slice_configs || segmented) && comm_.size() > 1;
    std::vector<int64_t> trained;
    std::pair<double, double> wait{0.0, 0.0};  // wall, CPU seconds in the score exchange
    if (segmented)
        loss = segment_step_work(global, scale, oom_settings, trained, wait);
    else if (sliced)
        loss = sliced_step_work(global, scale, oom_settings, trained, wait);
    for (int64_t id : sliced ? std::span<const int64_t>() : std::span<const int64_t>(local)) {
        const GraphEntry& e = dataset_->train()[static_cast<size_t>(id)];
        naming_graph_on_oom(e.info, "training on", oom_settings, [&] {
            const PreparedGraph& g = train_graph(id);
            ConfigSet cs = samplers_.at(id)->sample(step_);
            loss +=
                gst_train_graph(*model_, g, cs.indices, cs.targets, step_, scale, *history_, gst_)
                    .loss;
        });
    }
    last_busy_.wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() - wait.first;
    last_busy_.cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC - wait.second;
    // per_step: the rows this step wrote go to every rank before any rank trains these graphs.
    if (owners_.mode() == OwnershipMode::kPerStep)
        share_step_history(*history_, comm_, sliced ? trained : local, step_);
    comm_.allreduce_sum(model_->params().grads());
    if (ranking_only(gst_.loss_terms)) zero_output_bias_grad(model_->params());
    double sums[2] = {loss, last_busy_.cpu};  // the CPU time rides along with the loss
    comm_.allreduce_sum(std::span<double>(sums));
    loss = sums[0];
    last_busy_.cpu_mean = sums[1] / comm_.size();
    last_busy_.cpu_max = comm_.size() > 1 ? comm_.allreduce_max(last_busy_.cpu) : last_busy_.cpu;
    const double norm = clip_grad_norm(model_->params(), cfg_.optim.clip_norm);
    SEGRANK_CHECK(
        std::isfinite(norm) && std::isfinite(loss), "non-finite ",
        std::isfinite(loss) ? "gradient norm" : "loss", " at step ", step_,
        " (graphs of the batch: ",
        [&] {
            std::string s;
            for (int64_t id : global)
                s += (s.empty() ? "" : ", ") + dataset_->train()[static_cast<size_t>(id)].name;
            return s;
        }(),
        "); no checkpoint written", gst_.nonfinite_hint);
    optim_->step(model_->params(), static_cast<float>(schedule_.at(step_)));
    ++step_;
    last_loss_ = loss;
    return loss;
}

EvalResult Trainer::evaluate() {
    EvalResult r =
        evaluate_graphs(*model_, normalizer_, cfg_, dataset_->eval(), comm_, &eval_cache_);
    // No graph with distinct runtimes: the selection metric is undefined (selection_value's -1e300)
    // and "best" would be an arbitrary checkpoint. The same on every rank (rank 0's value).
    SEGRANK_CHECK(r.selection > -1e300, "eval.metric = \"", cfg::to_string(cfg_.eval.metric),
                  "\" is undefined on the evaluation set: none of its ", dataset_->eval().size(),
                  " graphs has two configs with distinct runtimes",
                  eval_indices_apply(cfg_, dataset_->eval())
                      ? str(" among the configs eval.indices (", key_location(cfg_, "eval.indices"),
                            ") lists for it: ", cfg_.eval.indices,
                            " leaves fewer than 2 configs with distinct runtimes in every graph "
                            "(list configs with distinct runtimes, or set eval.indices = \"\" to "
                            "score every config)")
                      : std::string(" (select an evaluation split or held-out set with measured, "
                                    "varying runtimes)"));
    return r;
}

void Trainer::log_jsonl(const Json& line) {
    if (comm_.rank() != 0) return;
    const auto file = run_dir_ / "metrics.jsonl";
    std::ofstream f(file, std::ios::app);
    f << dump_json(line) << "\n";
    f.flush();
    SEGRANK_CHECK(f.good(), file.string(), ": cannot append a line: ", std::strerror(errno));
}

}  // namespace segrank
