// Trainer: setup, the step, evaluation, early stopping and the run loop.
#include "trainer/trainer.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <iterator>

#include "gnn/core/check.h"
#include "gnn/core/hash.h"
#include "gnn/core/parallel.h"
#include "gnn/core/rng.h"
#include "sampling/dedupe.h"
#include "sampling/dedupe_stream.h"
#include "trainer/rank_agreement.h"
#include "trainer/run_dir.h"
#include "util/atomic_file.h"
#include "util/progress.h"
#include "util/user_input.h"

namespace segrank {

MatmulPrecision apply_model_precision(const RunConfig& cfg, bool announce) {
    const MatmulPrecision used = resolve_matmul_precision(cfg.model.precision);
    if (announce && used != cfg.model.precision)
        std::fprintf(stderr,
                     "segrank: model.precision = %s: this CPU has no native bf16 products (needs "
                     "avx512_core_bf16), using %s\n",
                     std::string(to_string(cfg.model.precision)).c_str(),
                     std::string(to_string(used)).c_str());
    set_matmul_precision(used);
    return used;
}

ModelConfig model_config_from(const RunConfig& cfg, Task task, int64_t feat_dim) {
    ModelConfig m;
    m.task = task;
    m.loop_depth = task == Task::kLayout && cfg.model.loop_depth;
    m.trip_counts = task == Task::kLayout && cfg.model.trip_counts;
    // The depth column, then the two trip columns, follow the normalized ones.
    m.feat_dim = feat_dim + (m.loop_depth ? 1 : 0) + (m.trip_counts ? kLoopTripCols : 0);
    m.hidden = cfg.model.hidden;
    m.layers = cfg.model.layers;
    m.opcode_dim = cfg.model.opcode_dim;
    m.config_dim = cfg.model.config_dim;
    m.activation = cfg.model.activation;
    m.dropout = static_cast<float>(cfg.model.dropout);
    m.config_join = cfg.model.config_join;
    m.exploit_independence = cfg.model.config_independence;
    m.hwmodel_prior = cfg.model.hwmodel_prior;
    m.layout_bytes = cfg.model.layout_bytes;
    m.readout = cfg.model.readout;
    m.config_attention = cfg.model.config_attention;
    m.config_attention_dim = cfg.model.config_attention_dim;
    m.tile_cost_features = cfg.model.tile_cost_features;
    m.validate();
    return m;
}

GstOptions gst_options_from(const RunConfig& cfg) {
    GstOptions o;
    o.aggregate = cfg.model.aggregate;
    o.fresh = cfg.segments.fresh;
    o.keep_prob = cfg.segments.keep_prob;
    o.history_init = cfg.segments.history_init;
    o.max_staleness = cfg.segments.max_staleness;
    o.seed = static_cast<uint64_t>(cfg.sampling.seed);
    o.loss_terms = cfg.loss.terms;
    o.loss_options.margin = cfg.loss.margin;
    o.loss_options.temperature = cfg.loss.temperature;
    o.skip_independent = cfg.model.config_independence && ranking_only(o.loss_terms);
    o.tta_orders = cfg.eval.tta_orders;
    o.dedupe_rows = cfg.eval.dedupe_rows;
    return o;
}

PrepareOptions prepare_options_from(const RunConfig& cfg) {
    PrepareOptions p;
    p.partition.method = cfg.segments.partition;
    p.partition.max_nodes = cfg.segments.max_nodes;
    p.partition.metis_seed = static_cast<uint64_t>(cfg.sampling.seed);
    p.halo_hops = cfg.segments.halo_hops;
    p.prune_hops = cfg.model.prune_hops;
    p.hardware = cfg.hwmodel.hardware;
    return p;
}

Json EvalResult::to_json() const {
    Json cs = Json::array();
    for (const CollectionMetrics& c : collections) cs.push_back(segrank::to_json(c));
    return Json{{"overall", overall}, {"collections", std::move(cs)}};
}

namespace {

// Higher is better for every selection metric (slowdowns are negated).
double selection_value(const EvalResult& r, cfg::EvalMetric metric) {
    double acc = 0.0;
    int n = 0;
    for (const auto& c : r.collections) {
        double v = 0.0;
        switch (metric) {
            case cfg::EvalMetric::kKaggle:
                v = c.score;
                break;
            case cfg::EvalMetric::kKendall:
                v = c.kendall_tau;
                break;
            case cfg::EvalMetric::kOpa:
                v = c.opa;
                break;
            case cfg::EvalMetric::kSlowdown1:
                v = -c.slowdown_1;
                break;
            case cfg::EvalMetric::kSlowdown5:
                v = -c.slowdown_5;
                break;
            case cfg::EvalMetric::kSlowdown10:
                v = -c.slowdown_10;
                break;
        }
        if (std::isfinite(v)) {
            acc += v;
            ++n;
        }
    }
    return n ? acc / n : -1e300;
}

// Under a shift-invariant (ranking-only) loss the head's output bias ("head2.bias", [1, 1]) has an
// exactly zero gradient; what arrives instead is rounding noise (~1e-10) that AdamW's normalization
// turns into steps of about lr in a random direction. Those steps shift every score equally, but
// HistoryTable entries keep the bias of the step that wrote them, so the noise leaks into the loss
// through stale segments and makes results depend on the world size and thread count. Zeroed.
void zero_output_bias_grad(ParamStore& params) {
    for (const auto& r : params.refs())
        if (r.name == "head2.bias") std::fill_n(params.grads().begin() + r.offset, r.size(), 0.0f);
}

// entry index, configs, constant, tau, opa, s1, s5, s10, raw tau, mape, median ape
constexpr int kPacked = 11;

}  // namespace

Ownership eval_ownership(const RunConfig& cfg, const std::vector<GraphEntry>& entries,
                         const EvalIndices& indices, int world) {
    if (cfg.dist.ownership == OwnershipMode::kModulo) return Ownership(world);
    std::vector<int64_t> costs(entries.size(), 0);
    for (const GraphEntry& e : entries) {
        SEGRANK_CHECK(e.id >= 0 && e.id < static_cast<int64_t>(entries.size()),
                      "ownership: evaluation graph ids must be 0..", entries.size() - 1,
                      "; graph '", e.name, "' has id ", e.id);
        int64_t configs = e.info.num_configs;
        if (!e.configs.empty()) {
            configs = static_cast<int64_t>(e.configs.size());
        } else if (auto it = indices.find(e.name); it != indices.end()) {
            configs = static_cast<int64_t>(it->second.size());
        }
        costs[static_cast<size_t>(e.id)] = e.info.num_nodes * configs;
    }
    return Ownership(cfg.dist.ownership, costs, world);
}

EvalResult evaluate_graphs(Model& model, const Normalizer& normalizer, const RunConfig& cfg,
                           const std::vector<GraphEntry>& entries, Communicator& comm,
                           std::map<int64_t, std::unique_ptr<PreparedGraph>>* cache,
                           int64_t random_seed) {
    const GstOptions opt = gst_options_from(cfg);
    const PrepareOptions prep = prepare_options_from(cfg);
    EvalIndices indices;
    if (!cfg.eval.indices.empty()) indices = load_eval_indices(cfg.eval.indices);
    const Ownership owners = eval_ownership(cfg, entries, indices, comm.size());
    // Kernel-runtime regression: the scores of a model trained with an mse term are standardized
    // log runtimes (not for the random baseline's uniform scores).
    bool has_mse = false;
    for (const LossTerm& t : cfg.loss.terms)
        has_mse = has_mse || (t.kind == LossKind::kMse && t.weight > 0);
    std::vector<double> packed;
    for (size_t i = 0; i < entries.size(); ++i) {
        const GraphEntry& e = entries[i];
        if (owners.owner(e.id) != comm.rank()) continue;
        std::unique_ptr<PreparedGraph> local;
        const PreparedGraph* pg = nullptr;
        if (cache) {
            auto it = cache->find(e.id);
            if (it == cache->end())
                it = cache->emplace(e.id, prepare_graph(e, normalizer, model, prep)).first;
            pg = it->second.get();
        } else {
            local = prepare_graph(e, normalizer, model, prep);
            pg = local.get();
        }
        std::vector<int64_t> configs = pg->configs;
        if (e.configs.empty() && !indices.empty()) {
            auto it = indices.find(e.name);
            SEGRANK_CHECK(it != indices.end(), cfg.eval.indices, ": no config indices for graph '",
                          e.name, "'");
            configs = it->second;
            for (int64_t c : configs)
                SEGRANK_CHECK(c >= 0 && c < pg->num_configs, cfg.eval.indices, ": graph '", e.name,
                              "': config index ", c, " out of range [0, ", pg->num_configs, ")");
        }
        std::vector<float> scores;
        if (random_seed >= 0) {
            Rng rng = Rng::derive(static_cast<uint64_t>(random_seed), 0, stream_id(e.name),
                                  "random_baseline");
            for (size_t j = 0; j < configs.size(); ++j)
                scores.push_back(static_cast<float>(rng.uniform()));
        } else {
            const InferenceChunk ch =
                inference_chunk(model, opt, cfg.eval.chunk_configs, cfg.eval.dedupe_chunk_configs);
            scores = score_graph(model, *pg, configs, ch.configs, opt, ch.max_bytes,
                                 int64_t{cfg.eval.cache_mb} << 20);
        }
        std::vector<double> targets(configs.size());
        for (size_t j = 0; j < configs.size(); ++j)
            targets[j] = pg->targets[static_cast<size_t>(configs[j])];
        const bool regression = has_mse && random_seed < 0 && e.collection.task == Task::kTile;
        // Tie policy: evaluate_graph scores the predicted order (ties broken by config index, as
        // `segrank predict` writes it), so this equals `segrank leaderboard` on the submission.
        GraphMetrics gm = evaluate_graph(e.name, scores, targets);
        if (regression) {  // docs/metrics.md#runtime-regression
            const RuntimeErrors re =
                runtime_errors(e.name, destandardized_runtimes(e.name, scores, targets), targets);
            gm.mape = re.mape;
            gm.median_ape = re.median_ape;
        }
        packed.insert(packed.end(),
                      {static_cast<double>(i), static_cast<double>(gm.num_configs),
                       gm.targets_constant ? 1.0 : 0.0, gm.kendall_tau, gm.opa, gm.slowdown_1,
                       gm.slowdown_5, gm.slowdown_10, gm.kendall_raw, gm.mape, gm.median_ape});
    }
    auto all = comm.gather(packed, 0);
    EvalResult res;
    std::vector<double> summary;
    if (comm.rank() == 0) {
        std::vector<GraphMetrics> graphs(entries.size());
        std::vector<uint8_t> seen(entries.size(), 0);
        for (const auto& part : all) {
            for (size_t p = 0; p + kPacked <= part.size(); p += kPacked) {
                const auto i = static_cast<size_t>(part[p]);
                GraphMetrics& gm = graphs[i];
                gm.name = entries[i].name;
                gm.num_configs = static_cast<int64_t>(part[p + 1]);
                gm.targets_constant = part[p + 2] != 0.0;
                gm.kendall_tau = part[p + 3];
                gm.opa = part[p + 4];
                gm.slowdown_1 = part[p + 5];
                gm.slowdown_5 = part[p + 6];
                gm.slowdown_10 = part[p + 7];
                gm.kendall_raw = part[p + 8];
                gm.mape = part[p + 9];
                gm.median_ape = part[p + 10];
                seen[i] = 1;
            }
        }
        std::map<std::string, std::vector<GraphMetrics>> by_collection;
        std::map<std::string, Task> tasks;
        for (size_t i = 0; i < entries.size(); ++i) {
            SEGRANK_ASSERT(seen[i], "graph ", entries[i].name, " was not evaluated by its owner");
            by_collection[entries[i].collection.name()].push_back(graphs[i]);
            tasks[entries[i].collection.name()] = entries[i].collection.task;
        }
        for (auto& [name, gms] : by_collection)
            res.collections.push_back(aggregate_collection(name, tasks[name], gms));
        res.overall = overall_score(res.collections);
        res.selection = selection_value(res, cfg.eval.metric);
        res.graphs = std::move(graphs);
        summary = {res.overall, res.selection};
    }
    // Every rank gets rank 0's exact selection value (the decisions themselves are rank 0's too:
    // decide_selection).
    res.selection = broadcast_double(comm, res.selection, 0);
    return res;
}

std::string eval_indices_digest(const RunConfig& cfg) {
    if (cfg.eval.indices.empty()) return "(none)\n";
    const std::string bytes =
        read_input_file(cfg.eval.indices, "an eval.indices JSON file", kMaxJsonFileBytes);
    return str(cfg.eval.indices, " xxh3_64 ", hash_hex(xxh3_64(bytes.data(), bytes.size())), "\n");
}

void check_eval_indices(const RunConfig& cfg, const std::vector<GraphEntry>& entries) {
    if (cfg.eval.indices.empty()) return;
    const EvalIndices indices = load_eval_indices(cfg.eval.indices);
    for (const GraphEntry& e : entries) {
        if (!e.configs.empty()) continue;  // held-out configs take precedence (evaluate_graphs)
        const auto it = indices.find(e.name);
        SEGRANK_CHECK(it != indices.end(), cfg.eval.indices,
                      ": eval.indices: no config indices for evaluation graph '", e.name, "' (",
                      e.collection.name(), ")");
        SEGRANK_CHECK(!it->second.empty(), cfg.eval.indices,
                      ": eval.indices: empty index list for graph '", e.name, "'");
        for (int64_t c : it->second)
            SEGRANK_CHECK(c < e.info.num_configs, cfg.eval.indices, ": eval.indices: graph '",
                          e.name, "': config index ", c, " out of range [0, ", e.info.num_configs,
                          ")");
    }
}

EvalResult random_baseline(Model& model, const Normalizer& normalizer, const RunConfig& cfg,
                           const std::vector<GraphEntry>& entries, Communicator& comm,
                           std::map<int64_t, std::unique_ptr<PreparedGraph>>* cache, int seeds) {
    EvalResult mean;
    for (int s = 0; s < seeds; ++s) {
        EvalResult r = evaluate_graphs(model, normalizer, cfg, entries, comm, cache, s);
        if (s == 0) {
            mean = std::move(r);
            continue;
        }
        for (size_t c = 0; c < mean.collections.size(); ++c) {
            auto& m = mean.collections[c];
            const auto& x = r.collections[c];
            m.kendall_tau += x.kendall_tau;
            m.kendall_raw += x.kendall_raw;
            m.opa += x.opa;
            m.slowdown_1 += x.slowdown_1;
            m.slowdown_5 += x.slowdown_5;
            m.slowdown_10 += x.slowdown_10;
            m.score += x.score;
        }
        mean.overall += r.overall;
        mean.selection += r.selection;
    }
    const double inv = 1.0 / std::max(1, seeds);
    for (auto& m : mean.collections) {
        m.kendall_tau *= inv;
        m.kendall_raw *= inv;
        m.opa *= inv;
        m.slowdown_1 *= inv;
        m.slowdown_5 *= inv;
        m.slowdown_10 *= inv;
        m.score *= inv;
    }
    mean.overall *= inv;
    mean.selection *= inv;
    mean.graphs.clear();
    return mean;
}

EvalResult Trainer::evaluate_random() {
    return random_baseline(*model_, normalizer_, cfg_, dataset_->eval(), comm_, &eval_cache_, 10);
}

Trainer::~Trainer() = default;

namespace {

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
    dataset_ = std::make_unique<Dataset>(cfg_.data, static_cast<uint64_t>(cfg_.sampling.seed));
    const auto& train = dataset_->train();
    check_ranks_agree(comm_, "list of graphs", graph_manifest(*dataset_));
    // One pass over everything each graph holds (node features, opcodes, edges, config rows,
    // config node ids, runtimes), before the normalizer: ranks reading other bytes for a graph
    // would fit other normalizers and build models of other sizes (heap corruption in the
    // collectives) or silently train on different data.
    data_manifest_ = data_manifest(train, dataset_->eval());
    check_ranks_agree(comm_,
                      "content of the graphs (data manifest: sizes, then the digests of the config "
                      "rows with runtimes and of node_feat, node_opcode, edge_index, "
                      "node_config_ids, node_splits)",
                      data_manifest_);
    check_ranks_agree(comm_, "eval.indices file", eval_indices_digest(cfg_));
    task_ = train.front().collection.task;
    for (const auto& e : train)
        SEGRANK_CHECK(e.collection.task == task_,
                      "data.collections: one run trains one task; found both '",
                      train.front().collection.name(), "' and '", e.collection.name(),
                      "' (select collections of one task)");
    for (const auto& e : dataset_->eval())
        SEGRANK_CHECK(e.collection.task == task_, "data.collections: evaluation graph '", e.name,
                      "' of ", e.collection.name(), " has another task than the training graphs");
    // config_check.cpp rejects "late" with layout collections named in the config (with file:line);
    // an unrestricted data.collections only reveals the task here, so point at the key ourselves.
    const std::string join_at = key_location(cfg_, "model.config_join");
    SEGRANK_CHECK(cfg_.model.config_join != ConfigJoin::kLate || task_ == Task::kTile, join_at,
                  join_at.empty() ? "" : ": ",
                  "model.config_join: \"late\" applies to tile collections only, but the training "
                  "graphs are ",
                  train.front().collection.name(),
                  " (set model.config_join = \"early\" or select tile collections)");
    const std::string cost_at = key_location(cfg_, "model.tile_cost_features");
    SEGRANK_CHECK(!cfg_.model.tile_cost_features || task_ == Task::kTile, cost_at,
                  cost_at.empty() ? "" : ": ",
                  "model.tile_cost_features: true applies to tile collections only, but the "
                  "training graphs are ",
                  train.front().collection.name(),
                  " (set model.tile_cost_features = false or select tile collections)");
    check_eval_indices(cfg_, dataset_->eval());  // fail now, not after training (first evaluation)

    const std::filesystem::path ckpt = run_dir_ / "last.ckpt.h5";
    if (resume_dir) {
        SEGRANK_CHECK(std::filesystem::exists(ckpt), "--resume ", resume_dir->string(),
                      ": no checkpoint '", ckpt.string(), "'");
        normalizer_ = load_checkpoint_normalizer(ckpt);
        check_checkpoint_data(ckpt);
    } else if (cfg_.data.normalize) {
        NormalizerFitter fitter(kNodeFeatDim);
        for (const auto& e : train) add_node_features(fitter, e);  // chunked for HDF5 stores
        normalizer_ = fitter.finish();
    } else {
        std::vector<int32_t> cols(kNodeFeatDim);
        for (int i = 0; i < kNodeFeatDim; ++i) cols[static_cast<size_t>(i)] = i;
        normalizer_ =
            Normalizer::from_vectors(kNodeFeatDim, cols, std::vector<double>(kNodeFeatDim, 0.0),
                                     std::vector<double>(kNodeFeatDim, 1.0), "identity normalizer");
    }

    model_ = std::make_unique<Model>(model_config_from(cfg_, task_, normalizer_.output_dim()));
    model_->params().initialize(static_cast<uint64_t>(cfg_.train.seed));
    AdamWConfig ac;
    ac.beta1 = static_cast<float>(cfg_.optim.beta1);
    ac.beta2 = static_cast<float>(cfg_.optim.beta2);
    ac.eps = static_cast<float>(cfg_.optim.eps);
    ac.weight_decay = static_cast<float>(cfg_.optim.weight_decay);
    optim_ = std::make_unique<AdamW>(model_->params(), ac);

    std::vector<int64_t> ids;
    for (const auto& e : train) ids.push_back(e.id);
    batches_ = std::make_unique<BatchSampler>(ids, cfg_.sampling.batch_graphs,
                                              static_cast<uint64_t>(cfg_.sampling.seed));
    // From the sizes every rank has agreed on (graph_manifest above): the same map on every rank.
    owners_ = Ownership(cfg_.dist.ownership, train_member_costs(train, cfg_.sampling.configs),
                        comm_.size());
    total_steps_ = cfg_.train.steps;
    if (cfg_.train.epochs > 0) {
        const int64_t by_epochs = cfg_.train.epochs * batches_->steps_per_epoch();
        total_steps_ = total_steps_ > 0 ? std::min(total_steps_, by_epochs) : by_epochs;
    }
    SEGRANK_CHECK(total_steps_ > 0, "train.steps and train.epochs are both 0: nothing to train");
    schedule_.kind = cfg_.optim.schedule;
    schedule_.base_lr = cfg_.optim.lr;
    schedule_.warmup_steps =
        std::min<int64_t>(cfg_.optim.warmup_steps, std::max<int64_t>(0, total_steps_ - 1));
    schedule_.total_steps = total_steps_;

    gst_ = gst_options_from(cfg_);
    prep_ = prepare_options_from(cfg_);
    prep_.partition_cache_dir = run_dir_ / "partitions";
    const int32_t width = gst_.aggregate == SegmentAggregate::kScoreSum
                              ? 1
                              : static_cast<int32_t>(model_->config().readout_width());
    history_ = std::make_unique<HistoryTable>(
        width, HistoryTable::bytes_from_mb(static_cast<double>(cfg_.segments.history_max_mb)));

    if (resume_dir) {
        load_checkpoint(ckpt);
        SEGRANK_CHECK(total_steps_ > step_, "--resume ", run_dir_.string(),
                      ": the checkpoint is at step ", step_, " and the run ends at step ",
                      total_steps_, " (train.steps = ", cfg_.train.steps,
                      ", train.epochs = ", cfg_.train.epochs,
                      "), so there is nothing left to train; raise train.steps",
                      cfg_.train.epochs > 0 ? " or train.epochs" : "");
        resumed_ = true;
        if (comm_.rank() == 0) {
            if (before_first_write) before_first_write();
            save_config(cfg_,
                        run_dir_ / "config.toml");  // the effective config, with this run's --set
            truncate_metrics_jsonl(run_dir_ / "metrics.jsonl", step_);
        }
    } else {
        comm_.broadcast(model_->params().values(), 0);
        if (comm_.rank() == 0) {
            if (before_first_write) before_first_write();
            std::filesystem::create_directories(run_dir_);
            save_config(cfg_, run_dir_ / "config.toml");
            write_file_atomically(run_dir_ / "metrics.jsonl", "");
        }
    }
    comm_.barrier();
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
    for (int64_t id : local) {
        const PreparedGraph& g = train_graph(id);
        ConfigSet cs = samplers_.at(id)->sample(step_);
        loss +=
            gst_train_graph(*model_, g, cs.indices, cs.targets, step_, scale, *history_, gst_).loss;
    }
    last_busy_.wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    last_busy_.cpu = static_cast<double>(std::clock() - c0) / CLOCKS_PER_SEC;
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
        "); no checkpoint written");
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
                  " graphs has two configs with distinct runtimes (select an evaluation split or "
                  "held-out set with measured, varying runtimes)");
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
