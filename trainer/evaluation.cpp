// Evaluation across ranks: per-graph scoring of the graphs a rank owns, the gather of their
// metrics on rank 0 (packed by visit_metric_fields), the per-collection aggregation, the selection
// metric, the random-ranking baseline, the eval.indices checks and the evaluation table.
#include "trainer/evaluation.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>
#include <string_view>
#include <type_traits>

#include "data/graph_memory.h"
#include "eval/metric_fields.h"
#include "eval/selection_range.h"
#include "gnn/core/check.h"
#include "gnn/core/hash.h"
#include "gnn/core/rng.h"
#include "gst/gst.h"
#include "trainer/config_options.h"
#include "trainer/selection.h"
#include "util/user_input.h"

namespace segrank {

Json EvalResult::to_json() const {
    Json cs = Json::array();
    for (const CollectionMetrics& c : collections) cs.push_back(segrank::to_json(c));
    return Json{{"overall", overall}, {"collections", std::move(cs)}};
}

namespace {

// The mean over collections of the selected field (NaN collections left out); -1e300 if none.
double selection_value(const EvalResult& r, cfg::EvalMetric metric) {
    const auto [key, sign] = selection_field(cfg::to_string(metric));
    double acc = 0.0;
    int n = 0;
    for (const auto& c : r.collections) {
        double v = std::numeric_limits<double>::quiet_NaN();
        bool found = false;
        visit_metric_fields(
            [&](const MetricField& f, const auto& x) {
                if constexpr (std::is_same_v<std::decay_t<decltype(x)>, double>)
                    if (key == f.key) v = sign * x, found = true;
            },
            c);
        SEGRANK_ASSERT(found, "selection_value: no metric field '", key, "'");
        if (std::isfinite(v)) {
            acc += v;
            ++n;
        }
    }
    return n ? acc / n : -1e300;
}

// A graph's metrics as gathered over ranks: the entry index, then every metric field of
// visit_metric_fields as a double (counts and flags are exact in double).
size_t packed_size() {
    size_t n = 1;
    GraphMetrics gm;
    visit_metric_fields([&](const MetricField&, const auto&) { ++n; }, gm);
    return n;
}

void pack_graph_metrics(std::vector<double>& packed, size_t entry, const GraphMetrics& gm) {
    packed.push_back(static_cast<double>(entry));
    visit_metric_fields(
        [&](const MetricField&, const auto& x) { packed.push_back(static_cast<double>(x)); }, gm);
}

// Unpacks one record starting at `p` (its entry index at p[0]) into `gm`.
void unpack_graph_metrics(const double* p, GraphMetrics& gm) {
    size_t k = 1;
    visit_metric_fields(
        [&](const MetricField&, auto& x) {
            using T = std::decay_t<decltype(x)>;
            if constexpr (std::is_same_v<T, bool>)
                x = p[k] != 0.0;
            else
                x = static_cast<T>(p[k]);
            ++k;
        },
        gm);
}

// The metrics of one evaluation graph: its configs (held-out configs, else its eval.indices list,
// else all) scored by the model, or by uniform random scores when random_seed >= 0.
GraphMetrics evaluate_entry(Model& model, const RunConfig& cfg, const GstOptions& opt,
                            const GraphEntry& e, const PreparedGraph& pg,
                            const EvalIndices& indices, bool has_mse, int64_t random_seed) {
    std::vector<int64_t> configs = pg.configs;
    if (e.configs.empty() && !indices.empty()) {
        auto it = indices.find(e.name);
        SEGRANK_CHECK(it != indices.end(), cfg.eval.indices, ": no config indices for graph '",
                      e.name, "'");
        configs = it->second;
        for (int64_t c : configs)
            SEGRANK_CHECK(c >= 0 && c < pg.num_configs, cfg.eval.indices, ": graph '", e.name,
                          "': config index ", c, " out of range [0, ", pg.num_configs, ")");
    }
    std::vector<float> scores;
    if (random_seed >= 0) {
        Rng rng = Rng::derive(static_cast<uint64_t>(random_seed), 0, stream_id(e.name),
                              "random_baseline");
        for (size_t j = 0; j < configs.size(); ++j)
            scores.push_back(static_cast<float>(rng.uniform()));
    } else {
        const InferenceBudget budget = inference_budget_from(cfg);
        const InferenceChunk ch = inference_chunk(model, opt, cfg.eval.chunk_configs,
                                                  cfg.eval.dedupe_chunk_configs, budget);
        scores = score_graph(model, pg, configs, ch, opt, budget.cache_bytes);
    }
    std::vector<double> targets(configs.size());
    for (size_t j = 0; j < configs.size(); ++j)
        targets[j] = pg.targets[static_cast<size_t>(configs[j])];
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
    return gm;
}

// Rank 0: the gathered records of every rank -> per-graph metrics (in entry order), per-collection
// aggregates (in name order), the overall score and the selection value.
EvalResult reduce_graph_metrics(const std::vector<std::vector<double>>& all,
                                const std::vector<GraphEntry>& entries, cfg::EvalMetric metric) {
    const size_t stride = packed_size();
    EvalResult res;
    std::vector<GraphMetrics> graphs(entries.size());
    std::vector<uint8_t> seen(entries.size(), 0);
    for (const auto& part : all) {
        for (size_t p = 0; p + stride <= part.size(); p += stride) {
            const auto i = static_cast<size_t>(part[p]);
            GraphMetrics& gm = graphs[i];
            gm.name = entries[i].name;
            unpack_graph_metrics(part.data() + p, gm);
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
    res.selection = selection_value(res, metric);
    res.graphs = std::move(graphs);
    return res;
}

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
    // per_step splits training steps; an evaluation is one pass, split once by LPT.
    return Ownership(OwnershipMode::kBalanced, costs, world);
}

EvalResult evaluate_graphs(Model& model, const Normalizer& normalizer, const RunConfig& cfg,
                           const std::vector<GraphEntry>& entries, Communicator& comm,
                           std::map<int64_t, std::unique_ptr<PreparedGraph>>* cache,
                           int64_t random_seed, const std::string& oom_advice) {
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
    const std::string oom_settings =  // once, not per graph
        oom_advice.empty() ? graph_memory_settings(cfg, true) : oom_advice;
    for (size_t i = 0; i < entries.size(); ++i) {
        const GraphEntry& e = entries[i];
        if (owners.owner(e.id) != comm.rank()) continue;
        naming_graph_on_oom(e.info, "evaluating", oom_settings, [&] {
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
            pack_graph_metrics(
                packed, i, evaluate_entry(model, cfg, opt, e, *pg, indices, has_mse, random_seed));
        });
    }
    auto all = comm.gather(packed, 0);
    EvalResult res;
    if (comm.rank() == 0) res = reduce_graph_metrics(all, entries, cfg.eval.metric);
    // Every rank gets rank 0's exact selection value (the decisions themselves are rank 0's too:
    // decide_selection).
    res.selection = broadcast_double(comm, res.selection, 0);
    return res;
}

std::string graph_memory_settings(const RunConfig& cfg, bool evaluating) {
    const std::string per_pass = evaluating ? str("eval.memory_mb = ", cfg.eval.memory_mb,
                                                  ", eval.chunk_configs = ", cfg.eval.chunk_configs)
                                            : str("sampling.configs = ", cfg.sampling.configs);
    return str("its memory grows with model.hidden = ", cfg.model.hidden, ", ", per_pass,
               " and segments.max_nodes = ", cfg.segments.max_nodes,
               " (0: the whole graph at once); lower them or give the process more memory "
               "(docs/config.md#out-of-memory)");
}

std::string eval_indices_content_digest(const RunConfig& cfg) {
    if (cfg.eval.indices.empty()) return "(none)";
    const std::string bytes =
        read_input_file(cfg.eval.indices, "an eval.indices JSON file", kMaxJsonFileBytes);
    return str("xxh3_64 ", hash_hex(xxh3_64(bytes.data(), bytes.size())));
}

std::string eval_indices_digest(const RunConfig& cfg) {
    if (cfg.eval.indices.empty()) return "(none)\n";
    return str(cfg.eval.indices, " ", eval_indices_content_digest(cfg), "\n");
}

bool check_eval_indices_file(const RunConfig& cfg, bool data_later) {
    if (cfg.eval.indices.empty()) return true;
    std::error_code ec;
    if (data_later &&
        !std::filesystem::exists(std::filesystem::symlink_status(cfg.eval.indices, ec)))
        return false;
    load_eval_indices(cfg.eval.indices);
    return true;
}

void check_eval_indices(const RunConfig& cfg, const std::vector<GraphEntry>& entries) {
    if (cfg.eval.indices.empty()) return;
    const EvalIndices indices = load_eval_indices(cfg.eval.indices);
    bool ranked = false;  // some graph has at least 2 listed configs (or held-out configs)
    std::string single;   // the first graph with 1 listed config
    for (const GraphEntry& e : entries) {
        if (!e.configs.empty()) {  // held-out configs take precedence (evaluate_graphs)
            ranked = true;
            continue;
        }
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
        const std::set<int64_t> distinct(it->second.begin(), it->second.end());
        if (distinct.size() >= 2)  // a repeated index is the same config again
            ranked = true;
        else if (single.empty())
            single = e.name;
    }
    // Every metric ranks the configs of a graph: with one listed config per graph it is undefined
    // on every graph, which the first evaluation (after training) would report naming no file.
    SEGRANK_CHECK(ranked || single.empty(), cfg.eval.indices,
                  ": eval.indices lists fewer than 2 configs for every evaluation graph (e.g. 1 "
                  "for '",
                  single, "'), so eval.metric = \"", cfg::to_string(cfg.eval.metric),
                  "\" is undefined on the evaluation set (it needs 2 configs with distinct "
                  "runtimes in some graph); list at least 2 configs of a graph, or set "
                  "eval.indices = \"\" to score every config (",
                  key_location(cfg, "eval.indices"), ")");
}

bool eval_indices_apply(const RunConfig& cfg, const std::vector<GraphEntry>& entries) {
    if (cfg.eval.indices.empty()) return false;
    for (const GraphEntry& e : entries)
        if (e.configs.empty()) return true;
    return false;
}

EvalResult random_baseline(Model& model, const Normalizer& normalizer, const RunConfig& cfg,
                           const std::vector<GraphEntry>& entries, Communicator& comm,
                           std::map<int64_t, std::unique_ptr<PreparedGraph>>* cache, int seeds) {
    // The metrics (doubles) are averaged over the seeds; the counts are those of every seed. The
    // runtime regression fields stay NaN (not computed for random scores).
    const auto add_if_double = [](const MetricField&, auto& sum, const auto& x) {
        if constexpr (std::is_same_v<std::decay_t<decltype(sum)>, double>) sum += x;
    };
    EvalResult mean;
    for (int s = 0; s < seeds; ++s) {
        EvalResult r = evaluate_graphs(model, normalizer, cfg, entries, comm, cache, s);
        if (s == 0) {
            mean = std::move(r);
            continue;
        }
        for (size_t c = 0; c < mean.collections.size(); ++c)
            visit_metric_fields(add_if_double, mean.collections[c], r.collections[c]);
        mean.overall += r.overall;
        mean.selection += r.selection;
    }
    const double inv = 1.0 / std::max(1, seeds);
    for (auto& m : mean.collections)
        visit_metric_fields(
            [&](const MetricField&, auto& x) {
                if constexpr (std::is_same_v<std::decay_t<decltype(x)>, double>) x *= inv;
            },
            m);
    mean.overall *= inv;
    mean.selection *= inv;
    mean.graphs.clear();
    return mean;
}

void print_eval_table(const EvalResult& r, const char* title) {
    std::printf("%s\n", title);
    std::printf("  %-22s", "collection");
    const CollectionMetrics header;  // only the field names are used
    visit_metric_fields(
        [&](const MetricField& f, const auto&) {
            if (f.column) std::printf(" %*s", f.width, f.column);
        },
        header);
    std::printf("\n");
    for (const auto& c : r.collections) {
        std::printf("  %-22s", c.collection.c_str());
        visit_metric_fields(
            [&](const MetricField& f, const auto& x) {
                if (!f.column) return;
                if constexpr (std::is_same_v<std::decay_t<decltype(x)>, double>)
                    std::printf(" %*.4f", f.width, x);
                else
                    std::printf(" %*lld", f.width, static_cast<long long>(x));
            },
            c);
        std::printf("\n");
    }
    std::printf("  overall %.4f\n", r.overall);
    std::fflush(stdout);
}

}  // namespace segrank
