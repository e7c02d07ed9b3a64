// `segrank tune`'s rounds, files and resume (cli/tune_rounds.h, docs/tune.md); the settings and
// spellings are in cli/tune_config.cpp.
#include "cli/tune_rounds.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <new>
#include <numeric>
#include <set>

#include "api/cost_model_internal.h"
#include "cli/tune_files.h"
#include "gnn/core/check.h"
#include "tune/explore.h"
#include "tune/search.h"
#include "util/exit_status.h"
#include "util/signal_relay.h"

namespace segrank::cli {

namespace fs = std::filesystem;

namespace {

void minmax(std::vector<double>& v) {
    if (v.empty()) return;
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const double a = *lo, b = *hi;
    for (auto& x : v) x = b > a ? (x - a) / (b - a) : 0.0;
}

// One tune_rounds call: the run's files, what is measured, the best so far (in res), and the
// steps of a round. Members are public: this is the body of tune_rounds cut into named steps.
struct TuneRun {
    CostModel* model;  // null: a model-free strategy (tune_model_free)
    const Graph& g;
    const tune::TuneGraph& record;
    const MeasureFn& measure;
    const TuneOptions& o;
    const int64_t c;
    const bool search;
    const fs::path meas_file;
    const fs::path best_file;
    const std::vector<int64_t> nodes;
    // Recorded index of each distinct recorded row (the first when rows repeat).
    std::map<std::string, int64_t> recorded_index;
    std::string rule;
    TuneResult res;
    tune::Config default_rows;
    std::set<std::string> measured;     // config_key of every measured config
    std::vector<tune::Trial> trials;    // every measurement, for the generator
    std::vector<int64_t> trial_rounds;  // the round of each of `trials`
    std::vector<tune::Config> ok_configs;
    std::vector<double> ok_runtimes;
    std::ofstream log;
    int64_t last_refit_count = -1;
    int64_t explored = 0;  // measurements that were exploration picks (RoundSchedule::explore)

    TuneRun(CostModel* model_, const Graph& g_, const tune::TuneGraph& record_,
            const MeasureFn& measure_, const TuneOptions& o_)
        : model(model_),
          g(g_),
          record(record_),
          measure(measure_),
          o(o_),
          c(g_.num_configs()),
          search(o_.generator != nullptr),
          meas_file(o_.out / "measurements.jsonl"),
          best_file(o_.out / "best.json"),
          nodes(g_.config_node_ids()) {}

    int64_t index_of(const tune::Config& x) const {
        const auto it = recorded_index.find(tune::config_key(x));
        return it == recorded_index.end() ? -1 : it->second;
    }
    bool stopped() const {
        if (!o.stop) return false;
        settle_relayed_signals();  // a signal sent during the last measurement is seen now
        return o.stop->load() != 0;
    }
    void write_best() { write_best_json(best_file, g, res, rule, nodes); }

    // Opens (or with --resume reopens) DIR, finds the default config, replays earlier
    // measurements and opens measurements.jsonl for appending.
    void open_dir(const Json& ident) {
        for (int64_t j = 0; j < c; ++j)
            recorded_index.emplace(tune::config_key(record.recorded_config(j)), j);
        const std::vector<Record> records =
            open_tune_dir(o, g, ident, search ? "search" : "recorded", model, record);
        res.default_config = default_config(g, &rule);
        default_rows = record.recorded_config(res.default_config);
        for (const Record& r : records) {
            note(r.round, r.config, r.runtime_ns, r.error, r.explored);
            res.rounds = std::max(res.rounds, r.round);
        }
        log.open(meas_file, std::ios::app | std::ios::binary);
        SEGRANK_CHECK(log.good(), meas_file.string(), ": cannot open for appending");
    }

    void note(int64_t round, const tune::Config& config, std::optional<double> ns,
              const std::string& error, bool exploration) {
        measured.insert(tune::config_key(config));
        trials.push_back({config, ns});
        trial_rounds.push_back(round);
        ++res.measured;
        explored += exploration;
        if (!ns) {
            if (res.failed++ == 0) res.first_error = error.empty() ? "not measured" : error;
            return;
        }
        ok_configs.push_back(config);
        ok_runtimes.push_back(*ns);
        if (config == default_rows) res.default_ns = ns;
        if (!res.best_ns || *ns < *res.best_ns) {
            res.best_ns = ns;
            res.best = config;
            res.best_config = index_of(config);
        }
    }

    // Measures one config and appends its line (flushed before the next measurement starts);
    // `exploration`: an exploration pick of the model's round (its line's "explored").
    void take(int64_t round, const tune::Config& config, double predicted, bool exploration) {
        const tune::Config one[1] = {config};
        std::vector<Measured> m;
        try {
            m = measure(std::span<const tune::Config>(one, 1));
        } catch (const tune::MeasurementInterrupted&) {
            return;  // a signal while the harness measured: nothing known, no line (--resume
                     // measures this config again)
        } catch (const Error& e) {
            // A backend that refuses one config (e.g. the timing model cannot lay it out) fails
            // that measurement; the run goes on and the line keeps the reason.
            m = {Measured{std::nullopt, e.what()}};
        }
        SEGRANK_CHECK(m.size() == 1, "--measure ", o.measure, ": returned ", m.size(),
                      " results for one config");
        if (!m[0].runtime_ns && m[0].error.empty()) m[0].error = "not measured";
        note(round, config, m[0].runtime_ns, m[0].error, exploration);
        Json line = Json::object();
        line["round"] = round;
        const int64_t idx = index_of(config);
        line["config"] = idx >= 0 ? Json(idx) : Json(nullptr);
        if (search) line["rows"] = rows_json(config);
        line["predicted"] = std::isfinite(predicted) ? Json(predicted) : Json(nullptr);
        if (model) line["explored"] = exploration;
        line["measured_ns"] = m[0].runtime_ns ? Json(*m[0].runtime_ns) : Json(nullptr);
        if (!m[0].runtime_ns) line["error"] = m[0].error;
        line["best_ns"] = res.best_ns ? Json(*res.best_ns) : Json(nullptr);
        line["best_config"] =
            res.best_ns && res.best_config >= 0 ? Json(res.best_config) : Json(nullptr);
        log << dump_json(line) << '\n';
        log.flush();
        SEGRANK_CHECK(log.good(), meas_file.string(), ": write failed (disk full?)");
        ++res.measured_now;
    }

    // Round 0: the default config, unless it is measured already.
    void measure_default() {
        if (!measured.count(tune::config_key(default_rows)) && res.measured < o.budget &&
            !stopped()) {
            const int64_t d[1] = {res.default_config};
            const double predicted =
                model ? model->score(g, std::span<const int64_t>(d, 1))[0] : NAN;
            take(0, default_rows, predicted, false);
            if (stopped() && !measured.count(tune::config_key(default_rows)))
                return;  // interrupted
            write_best();
            if (o.progress)
                std::printf(
                    "tune: round 0: default config %lld measured: %s\n",
                    static_cast<long long>(res.default_config),
                    res.default_ns ? (runtime_text(*res.default_ns) + " ns").c_str() : "failed");
        }
    }

    // Proposals per round of --candidates search: --pool, else max(2048, 8 B) up to kMaxPool.
    int64_t default_pool() const {
        return std::max<int64_t>(kDefaultPool, 8 * std::min<int64_t>(o.batch.cap, kMaxPool / 8));
    }
    int64_t pool_size() const { return o.pool > 0 ? o.pool : default_pool(); }

    // What a round that ran out of memory proposing or scoring its candidates says: how many it
    // scored, what lowers it, and that the measurements so far resume (the round measured
    // nothing yet). `detail` is the generic text's parenthesis (the address-space limit).
    std::string round_oom_message(int64_t round, const std::string& detail) const {
        const std::string what =
            search ? str(pool_size(), " proposals of --pool (lower --pool, e.g. --pool ",
                         default_pool(), ")")
                   : str(c, " recorded configs of graph ", g.where(),
                         " (a graph with fewer configs, or more memory)");
        return str("out of memory in round ", round, " while scoring ", what, "; the ",
                   res.measured, " measurements so far are in ", meas_file.string(),
                   " (continue with --resume) ", detail);
    }

    // The round's open candidates, as rows (and in recorded mode their indices in g).
    void open_candidates(std::vector<tune::Config>& open, std::vector<int64_t>& open_index) const {
        if (search) {
            open = o.generator->propose(pool_size(), trials, res.rounds + 1);
        } else {
            for (int64_t j = 0; j < c; ++j) {
                tune::Config x = record.recorded_config(j);
                if (measured.count(tune::config_key(x)) || index_of(x) != j) continue;
                open.push_back(std::move(x));
                open_index.push_back(j);
            }
        }
    }

    // Refits the model on every successful measurement, when there are new ones.
    void refit_if_new() {
        if (o.refit != RefitMode::kNone &&
            static_cast<int64_t>(ok_configs.size()) != last_refit_count) {
            std::vector<int64_t> idx;
            std::optional<Graph> fit_graph;
            bool all_recorded = true;
            for (const auto& x : ok_configs) {
                idx.push_back(index_of(x));
                all_recorded = all_recorded && idx.back() >= 0;
            }
            if (!all_recorded) {
                fit_graph = graph_of_configs(record, ok_configs);
                std::iota(idx.begin(), idx.end(), int64_t{0});
            }
            model->refit(fit_graph ? *fit_graph : g, idx, ok_runtimes,
                         o.refit == RefitMode::kHead ? CostModel::RefitScope::kHead
                                                     : CostModel::RefitScope::kAll,
                         o.refit_steps, o.refit_lr,
                         [this] { return o.stop && o.stop->load() != 0; });  // SIGINT/SIGTERM
            last_refit_count = static_cast<int64_t>(ok_configs.size());
        }
    }

    // Scores of the open configs: `ens` the ensemble as CostModel::score, `norm` each member's
    // min-max normalized scores.
    void score(const std::vector<tune::Config>& open, const std::vector<int64_t>& open_index,
               std::vector<double>& ens, std::vector<std::vector<double>>& norm) const {
        std::vector<std::vector<float>> ms;
        if (search) {
            const Graph pool_graph = graph_of_configs(record, open);
            ms = model->member_scores(pool_graph, {});
        } else {
            ms = model->member_scores(g, open_index);
        }
        ens.assign(open.size(), 0.0);
        for (const auto& s : ms) {
            std::vector<double> d(s.begin(), s.end());
            std::vector<double> n = d;
            minmax(n);
            if (model->num_members() > 1) d = n;
            for (size_t i = 0; i < d.size(); ++i) ens[i] += d[i];
            norm.push_back(std::move(n));
        }
        for (auto& x : ens) x /= static_cast<double>(ms.size());
    }

    // The round's k picks: the k - `explore` best-ranked open configs, then `explore` exploration
    // picks (RoundSchedule::explore) among the open configs where the members disagree most
    // (variance of their min-max normalized scores), or, with one member, draws of the seed, in
    // a round starting (after `round_start` measurements) in the second half of the budget the
    // one-knob changes of the best config so far, spread over the kinds of knob by their measured
    // sensitivity, the model's best first within a kind (tune/explore.h).
    std::vector<int64_t> pick(int64_t k, int64_t explore, int64_t round_start,
                              const std::vector<tune::Config>& open, const std::vector<double>& ens,
                              const std::vector<std::vector<double>>& norm,
                              int64_t task_members) const {
        std::vector<int64_t> order = CostModel::ranking(ens);
        const int64_t exploit = k - explore;
        std::vector<int64_t> picks(order.begin(), order.begin() + exploit);
        std::vector<char> picked(ens.size(), 0);
        for (int64_t p : picks) picked[static_cast<size_t>(p)] = 1;
        if (explore > 0) {
            std::vector<int64_t> rest;
            if (task_members >= 2) {
                for (size_t i = 0; i < ens.size(); ++i)
                    if (!picked[i]) rest.push_back(static_cast<int64_t>(i));
                std::vector<double> spread(ens.size(), 0.0);
                for (size_t i = 0; i < ens.size(); ++i) {
                    double mean = 0, sq = 0;
                    for (const auto& n : norm) mean += n[i];
                    mean /= static_cast<double>(norm.size());
                    for (const auto& n : norm) sq += (n[i] - mean) * (n[i] - mean);
                    spread[i] = sq / static_cast<double>(norm.size());
                }
                std::stable_sort(rest.begin(), rest.end(),
                                 [&](int64_t a, int64_t b) { return spread[a] > spread[b]; });
            } else {
                // The second half of the budget refines the incumbent (docs/tune.md).
                const tune::Config* incumbent = res.best ? &*res.best : &default_rows;
                // Its one-knob changes go to the kinds of knob whose measured changes moved the
                // runtime.
                const bool second_half = 2 * round_start >= o.budget;
                std::optional<tune::KnobSensitivity> kinds;
                if (second_half) kinds = tune::knob_sensitivity(ok_configs, ok_runtimes);
                rest = tune::exploration_order(open, ens, picked, second_half ? incumbent : nullptr,
                                               o.seed, res.rounds, kinds ? &*kinds : nullptr);
            }
            for (int64_t i = 0; i < explore && i < static_cast<int64_t>(rest.size()); ++i)
                picks.push_back(rest[static_cast<size_t>(i)]);
        }
        return picks;
    }

    // Exploration picks of the next round of k configs: RoundSchedule::explore, but with one model
    // of the task all but one in a round that starts in the second half of the budget after a
    // round that found nothing faster than the best before it (docs/tune.md#one-knob-exploration).
    int64_t exploration_picks(int64_t k, int64_t task_members) const {
        const int64_t x = o.batch.explore(k, res.measured, explored);
        if (task_members >= 2 || 2 * res.measured < o.budget) return x;
        std::vector<std::optional<double>> runtimes;
        for (const auto& t : trials) runtimes.push_back(t.runtime_ns);
        return tune::last_round_improved(trial_rounds, runtimes) ? x : std::max(x, k - 1);
    }

    // The round's progress line on stdout; `measured_in_round` counts the measurements the round
    // took (not the configs it picked: a signal can stop it early, and a search's batch can
    // repeat configs answered from earlier measurements).
    void print_round(int64_t measured_in_round) const {
        std::printf("tune: round %lld: %lld measured (%lld of budget %lld), best %s",
                    static_cast<long long>(res.rounds), static_cast<long long>(measured_in_round),
                    static_cast<long long>(res.measured), static_cast<long long>(o.budget),
                    res.best_ns ? str(runtime_text(*res.best_ns), " ns (config ",
                                      res.best_config >= 0 ? std::to_string(res.best_config)
                                                           : std::string("not recorded"),
                                      ")")
                                      .c_str()
                                : "none");
        if (res.best_ns && res.default_ns)
            std::printf(", %.3fx the default", *res.default_ns / *res.best_ns);
        std::printf("\n");
        std::fflush(stdout);
    }

    void run_rounds() {
        int64_t task_members = 0;
        for (size_t m = 0; m < model->num_members(); ++m)
            task_members += model->task(m) == g.task();
        while (res.measured < o.budget && !stopped()) {
            std::vector<tune::Config> open;
            std::vector<int64_t> open_index;
            std::vector<double> ens;
            std::vector<std::vector<double>> norm;
            // Out of memory proposing or scoring a round is said with what it scored; what the
            // round held is given back before the message is built.
            const auto out_of_memory = [&](int64_t round) {
                open = {};
                open_index = {};
                ens = {};
                norm = {};
                const std::string generic = out_of_memory_message();
                return Error(round_oom_message(
                    round, generic.substr(std::min(generic.find('('), generic.size()))));
            };
            try {
                open_candidates(open, open_index);
            } catch (const std::bad_alloc&) {
                throw out_of_memory(res.rounds + 1);
            }
            if (open.empty()) break;
            refit_if_new();
            if (stopped()) break;  // a signal during the refit: no new round
            ++res.rounds;
            if (o.progress && static_cast<int64_t>(open.size()) > kAnnouncedPool) {
                std::printf("tune: round %lld: scoring %zu proposals with the cost model\n",
                            static_cast<long long>(res.rounds), open.size());
                std::fflush(stdout);
            }
            try {
                score(open, open_index, ens, norm);
            } catch (const std::bad_alloc&) {
                throw out_of_memory(res.rounds);
            }
            const int64_t k = std::min({o.batch.size(res.measured), o.budget - res.measured,
                                        static_cast<int64_t>(open.size())});
            const int64_t explore = exploration_picks(k, task_members);
            const std::vector<int64_t> picks =
                pick(k, explore, res.measured, open, ens, norm, task_members);
            const int64_t before = res.measured;
            for (size_t i = 0; i < picks.size(); ++i) {  // the exploration picks come last
                if (stopped()) break;
                const auto p = static_cast<size_t>(picks[i]);
                take(res.rounds, open[p], ens[p], static_cast<int64_t>(i) >= k - explore);
            }
            write_best();
            if (o.progress) print_round(res.measured - before);
        }
    }
};

// A tune/search.h baseline's measurer: every config it asks for is taken by the run (one line of
// measurements.jsonl, one round per measure call); a config the run measured already (the
// default) is answered from that measurement without a new one.
class RunMeasurer : public tune::Measurer {
public:
    explicit RunMeasurer(TuneRun& run) : run_(run) {}
    std::vector<tune::Measurement> measure(std::span<const tune::Config> configs) override {
        ++run_.res.rounds;
        const int64_t before = run_.res.measured;
        std::vector<tune::Measurement> out;
        for (const tune::Config& c : configs) {
            const auto earlier = std::find_if(run_.trials.begin(), run_.trials.end(),
                                              [&](const tune::Trial& t) { return t.config == c; });
            if (earlier != run_.trials.end()) {
                out.push_back(earlier->runtime_ns ? tune::Measurement::success(*earlier->runtime_ns)
                                                  : tune::Measurement::failure("failed before"));
            } else if (run_.stopped() || run_.res.measured >= run_.o.budget) {
                out.push_back(tune::Measurement::failure("not measured: the run is stopping"));
            } else {
                run_.take(run_.res.rounds, c, NAN, false);
                const auto& t = run_.trials.back();
                out.push_back(t.runtime_ns ? tune::Measurement::success(*t.runtime_ns)
                                           : tune::Measurement::failure("failed"));
            }
        }
        // A call answered wholly from earlier measurements (the default again) is no round.
        if (run_.res.measured == before) {
            --run_.res.rounds;
        } else if (run_.o.progress) {
            run_.print_round(run_.res.measured - before);
        }
        return out;
    }
    std::string name() const override { return run_.o.measure; }

private:
    TuneRun& run_;
};

}  // namespace

TuneResult tune_model_free(const Graph& g, const tune::TuneGraph& record, const MeasureFn& measure,
                           const TuneOptions& o, const tune::SearchSpace& space) {
    SEGRANK_CHECK(o.strategy == Strategy::kAnneal || o.strategy == Strategy::kRandom,
                  "tune: model-free strategy expected (anneal or random), got ",
                  strategy_name(o.strategy));
    SEGRANK_CHECK(o.budget >= 1, "--budget: expected >= 1, got ", o.budget);
    SEGRANK_CHECK(o.batch.cap >= 1, "--batch: expected >= 1, got ", o.batch.cap);
    SEGRANK_CHECK(!o.out.empty(), "missing --out DIR");
    SEGRANK_CHECK(!o.resume, "--resume: --strategy ", strategy_name(o.strategy),
                  " does not resume (its search state is not in DIR); start a new --out");
    SEGRANK_CHECK(o.generator != nullptr, "--strategy ", strategy_name(o.strategy),
                  ": searches the module's configurations, expected --candidates search");
    const int64_t c = g.num_configs();
    SEGRANK_CHECK(c >= 1 && record.num_recorded() == c, g.where(), ": the graph has ", c,
                  " configs and its record ", record.num_recorded(), " (expected the same, >= 1)");
    TuneRun run(nullptr, g, record, measure, o);
    run.open_dir(graph_identity(g, record));
    run.measure_default();
    // The search's own first measurement is the space's default: free when it is the recorded
    // default measured in round 0.
    const bool start_free = run.measured.count(tune::config_key(space.default_config())) > 0;
    const int64_t budget = o.budget - run.res.measured + (start_free ? 1 : 0);
    if (budget >= 1 && !run.stopped()) {
        RunMeasurer m(run);
        if (o.strategy == Strategy::kAnneal) {
            tune::AnnealOptions ao;
            ao.budget = budget;
            ao.seed = o.seed;
            ao.batch = o.batch;
            (void)tune::simulated_annealing(space, m, ao);
        } else {
            (void)tune::random_search(space, m, budget, o.seed, o.batch);
        }
    }
    if (run.res.measured > 0 || !run.stopped()) run.write_best();  // a stop before the first: none
    if (run.stopped()) run.res.interrupted_by = o.stop->load();
    return run.res;
}

TuneResult tune_rounds(CostModel& model, const Graph& g, const tune::TuneGraph& record,
                       const MeasureFn& measure, const TuneOptions& o) {
    SEGRANK_CHECK(o.budget >= 1, "--budget: expected >= 1, got ", o.budget);
    SEGRANK_CHECK(o.batch.cap >= 1, "--batch: expected >= 1, got ", o.batch.cap);
    SEGRANK_CHECK(o.pool >= 0 && o.pool <= kMaxPool, "tune: pool: expected 0..", kMaxPool, ", got ",
                  o.pool);
    SEGRANK_CHECK(!o.out.empty(), "missing --out DIR");
    SEGRANK_CHECK(model.covers(g.task()), g.where(), ": no --checkpoint was trained on the ",
                  cost_task_name(g.task()), " task");
    const int64_t c = g.num_configs();
    SEGRANK_CHECK(c >= 1 && record.num_recorded() == c, g.where(), ": the graph has ", c,
                  " configs and its record ", record.num_recorded(), " (expected the same, >= 1)");
    TuneRun run(&model, g, record, measure, o);
    run.open_dir(graph_identity(g, record));
    run.measure_default();
    run.run_rounds();
    if (run.res.measured_now == 0 && run.res.measured > 0) run.write_best();  // a finished resume
    if (run.stopped()) run.res.interrupted_by = o.stop->load();
    return run.res;
}

}  // namespace segrank::cli
