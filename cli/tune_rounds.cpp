// `segrank tune`'s rounds, files and resume (cli/tune_rounds.h, docs/tune.md).
#include "cli/tune_rounds.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <numeric>
#include <set>
#include <sstream>

#include "api/cost_model_internal.h"
#include "gnn/core/check.h"
#include "gnn/core/rng.h"
#include "util/atomic_file.h"

namespace segrank::cli {

namespace fs = std::filesystem;

RefitMode parse_refit(const std::string& s) {
    if (s == "none") return RefitMode::kNone;
    if (s == "head") return RefitMode::kHead;
    if (s == "full") return RefitMode::kFull;
    SEGRANK_CHECK(false, "--refit: expected none, head or full, got '", s, "'");
    return RefitMode::kNone;
}

int64_t default_config(const Graph& g, std::string* rule) {
    const Graph::Impl& gi = *g.impl();
    const GraphSource& src = *gi.entry.source;
    const int64_t c = g.num_configs();
    std::lock_guard<std::recursive_mutex> lock(cost_model_mutex());
    if (g.task() == CostTask::kLayout) {
        const int64_t nc = g.num_config_nodes();
        const int64_t per = nc * kLayoutConfigDim;
        // Read in chunks so a graph with many configurable nodes is not loaded whole.
        const int64_t chunk = std::max<int64_t>(1, (int64_t{8} << 20) / std::max<int64_t>(per, 1));
        std::vector<int8_t> buf;
        for (int64_t b = 0; b < c; b += chunk) {
            const int64_t e = std::min(c, b + chunk);
            std::vector<int64_t> rows(static_cast<size_t>(e - b));
            std::iota(rows.begin(), rows.end(), b);
            buf.resize(static_cast<size_t>((e - b) * per));
            src.read_layout_config_rows(gi.entry.index, rows, buf);
            for (int64_t j = 0; j < e - b; ++j) {
                const int8_t* r = buf.data() + j * per;
                if (std::all_of(r, r + per, [](int8_t v) { return v == -1; })) {
                    if (rule) *rule = "every layout slot -1 (the compiler's default layout)";
                    return b + j;
                }
            }
        }
        if (rule) *rule = "no config leaves every layout slot -1: config 0 taken as the reference";
        return 0;
    }
    const ConfigTensors labels = src.load_labels(gi.entry.index);
    for (int64_t j = 0; j < c; ++j)
        if (labels.runtime[static_cast<size_t>(j)] > 0 &&
            static_cast<size_t>(j) < labels.runtime_normalizers.size() &&
            labels.runtime[static_cast<size_t>(j)] ==
                labels.runtime_normalizers[static_cast<size_t>(j)]) {
            if (rule)
                *rule =
                    "the first config whose runtime equals config_runtime_normalizers (the "
                    "is_default run's time)";
            return j;
        }
    if (rule)
        *rule =
            "no config's runtime equals config_runtime_normalizers (no default marker): config 0 "
            "taken as the reference";
    return 0;
}

Json xla_config(const Graph& g, int64_t c) {
    const std::vector<float> row = g.config_row(c);
    if (g.task() == CostTask::kTile) {
        Json out = Json::object();
        const char* names[3] = {"kernel_bounds", "output_bounds", "input_bounds"};
        for (int t = 0; t < 3; ++t) {
            std::vector<int64_t> b;
            for (int d = 0; d < 6; ++d) b.push_back(static_cast<int64_t>(row[t * 8 + d]));
            while (!b.empty() && b.back() == 0) b.pop_back();
            out[names[t]] = b;
        }
        return out;
    }
    const std::vector<int64_t> nodes = g.config_node_ids();
    Json out = Json::array();
    const char* names[3] = {"output", "input", "kernel"};
    for (size_t k = 0; k < nodes.size(); ++k) {
        Json node = Json::object();
        node["node"] = nodes[k];
        for (int t = 0; t < 3; ++t) {
            std::string s = "{";
            int n = 0;
            for (int d = 0; d < 6; ++d) {
                const auto v = static_cast<int64_t>(row[k * kLayoutConfigDim + t * 6 + d]);
                if (v < 0) break;
                if (n++) s += ',';
                s += std::to_string(v);
            }
            node[names[t]] = n == 0 ? std::string("default") : s + "}";
        }
        out.push_back(node);
    }
    return out;
}

namespace {

// Identity of the graph a DIR measures, compared on --resume.
Json graph_identity(const Graph& g) {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t r : g.runtimes_ns()) h = (h ^ static_cast<uint64_t>(r)) * 1099511628211ULL;
    Json j = Json::object();
    j["name"] = g.name();
    j["task"] = cost_task_name(g.task());
    j["num_nodes"] = g.num_nodes();
    j["num_configs"] = g.num_configs();
    j["num_config_nodes"] = g.num_config_nodes();
    j["runtimes_fnv1a"] = str(std::hex, h);
    return j;
}

struct Record {
    int64_t round = 0;
    int64_t config = 0;
    std::optional<double> runtime_ns;
};

// Reads DIR/measurements.jsonl; a torn last line (a kill mid-write) is dropped and the file
// rewritten without it.
std::vector<Record> read_measurements(const fs::path& file, int64_t num_configs) {
    std::vector<Record> out;
    std::ifstream in(file, std::ios::binary);
    if (!in) return out;
    std::stringstream ss;
    ss << in.rdbuf();
    const std::string text = ss.str();
    std::vector<std::string> lines;
    size_t pos = 0;
    while (pos < text.size()) {
        const size_t nl = text.find('\n', pos);
        lines.push_back(text.substr(pos, nl == std::string::npos ? std::string::npos : nl - pos));
        if (nl == std::string::npos) {
            lines.back().insert(0, 1, '\0');  // marks an unterminated last line
            break;
        }
        pos = nl + 1;
    }
    std::set<int64_t> seen;
    std::string kept;
    bool torn = false;
    for (size_t i = 0; i < lines.size(); ++i) {
        const bool last = i + 1 == lines.size();
        std::string line = lines[i];
        const bool unterminated = !line.empty() && line[0] == '\0';
        if (unterminated) {
            torn = true;  // written up to the kill: the measurement is taken again
            break;
        }
        if (line.empty()) continue;
        Json j;
        try {
            j = read_json(line, file.string(), static_cast<int64_t>(i + 1));
        } catch (const Error&) {
            if (last) {
                torn = true;
                break;
            }
            throw;
        }
        const std::string at = str(file.string(), ":", i + 1);
        SEGRANK_CHECK(j.is_object() && j.contains("config") && j["config"].is_number_integer() &&
                          j.contains("round") && j["round"].is_number_integer(),
                      at, ": expected an object with integer \"round\" and \"config\"");
        Record r;
        r.round = j["round"].get<int64_t>();
        r.config = j["config"].get<int64_t>();
        SEGRANK_CHECK(r.config >= 0 && r.config < num_configs, at, ": config ", r.config,
                      " is out of range (the graph has ", num_configs, " configs)");
        SEGRANK_CHECK(seen.insert(r.config).second, at, ": config ", r.config,
                      " is measured twice");
        if (j.contains("measured_ns") && j["measured_ns"].is_number()) {
            r.runtime_ns = j["measured_ns"].get<double>();
            SEGRANK_CHECK(std::isfinite(*r.runtime_ns) && *r.runtime_ns > 0, at,
                          ": measured_ns is ", *r.runtime_ns, ", expected a positive number");
        }
        out.push_back(r);
        kept += line + "\n";
    }
    if (torn) write_file_atomically(file, kept);
    return out;
}

void minmax(std::vector<double>& v) {
    if (v.empty()) return;
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const double a = *lo, b = *hi;
    for (auto& x : v) x = b > a ? (x - a) / (b - a) : 0.0;
}

}  // namespace

TuneResult tune_rounds(CostModel& model, const Graph& g, const MeasureFn& measure,
                       const TuneOptions& o) {
    SEGRANK_CHECK(o.budget >= 1, "--budget: expected >= 1, got ", o.budget);
    SEGRANK_CHECK(o.batch >= 1, "--batch: expected >= 1, got ", o.batch);
    SEGRANK_CHECK(!o.out.empty(), "missing --out DIR");
    SEGRANK_CHECK(model.covers(g.task()), g.where(), ": no --checkpoint was trained on the ",
                  cost_task_name(g.task()), " task");
    const int64_t c = g.num_configs();
    SEGRANK_CHECK(c >= 1, g.where(), ": the graph has no configs");
    const fs::path meas_file = o.out / "measurements.jsonl";
    const fs::path ident_file = o.out / "tune.json";
    const fs::path best_file = o.out / "best.json";
    const Json ident = graph_identity(g);

    std::vector<Record> records;
    if (o.resume) {
        SEGRANK_CHECK(fs::is_regular_file(ident_file), "--resume ", o.out.string(),
                      ": no tune.json (not a segrank tune directory)");
        const Json old = read_json_file(ident_file);
        SEGRANK_CHECK(old.contains("graph") && old["graph"] == ident, "--resume ", o.out.string(),
                      ": the directory holds measurements of another graph (",
                      old.contains("graph") ? dump_json(old["graph"]) : std::string("none"),
                      "), not of ", g.where(), " (", dump_json(ident), ")");
        records = read_measurements(meas_file, c);
    } else {
        SEGRANK_CHECK(!fs::exists(ident_file) && !fs::exists(meas_file), "--out ", o.out.string(),
                      " already holds a tuning run (tune.json / measurements.jsonl): continue it "
                      "with --resume or choose another directory");
        std::error_code ec;
        fs::create_directories(o.out, ec);
        SEGRANK_CHECK(!ec && fs::is_directory(o.out), "--out ", o.out.string(),
                      ": cannot create the directory (", ec.message(), ")");
        Json j = Json::object();
        j["graph"] = ident;
        j["where"] = g.where();
        j["measure"] = o.measure;
        Json ck = Json::array();
        for (size_t m = 0; m < model.num_members(); ++m) ck.push_back(model.checkpoint(m));
        j["checkpoints"] = ck;
        write_file_atomically(ident_file, dump_json(j) + "\n");
    }

    std::string rule;
    TuneResult res;
    res.default_config = default_config(g, &rule);
    std::vector<char> measured(static_cast<size_t>(c), 0);
    std::vector<int64_t> ok_configs;
    std::vector<double> ok_runtimes;
    auto note = [&](int64_t config, std::optional<double> ns) {
        measured[static_cast<size_t>(config)] = 1;
        ++res.measured;
        if (!ns) return;
        ok_configs.push_back(config);
        ok_runtimes.push_back(*ns);
        if (config == res.default_config) res.default_ns = ns;
        if (!res.best_ns || *ns < *res.best_ns) {
            res.best_ns = ns;
            res.best_config = config;
        }
    };
    for (const Record& r : records) {
        note(r.config, r.runtime_ns);
        res.rounds = std::max(res.rounds, r.round);
    }

    std::ofstream log(meas_file, std::ios::app | std::ios::binary);
    SEGRANK_CHECK(log.good(), meas_file.string(), ": cannot open for appending");

    auto write_best = [&]() {
        Json b = Json::object();
        b["graph"] = g.where();
        b["measured"] = res.measured;
        b["default_config"] = res.default_config;
        b["default_rule"] = rule;
        b["default_runtime_ns"] = res.default_ns ? Json(*res.default_ns) : Json(nullptr);
        if (res.best_ns) {
            b["config"] = res.best_config;
            b["runtime_ns"] = *res.best_ns;
            b["speedup_over_default"] =
                res.default_ns ? Json(*res.default_ns / *res.best_ns) : Json(nullptr);
            const std::vector<float> row = g.config_row(res.best_config);
            if (g.task() == CostTask::kTile) {
                b["config_feat"] = row;
            } else {
                Json rows = Json::array();
                for (int64_t k = 0; k < g.num_config_nodes(); ++k)
                    rows.push_back(std::vector<int64_t>(row.begin() + k * kLayoutConfigDim,
                                                        row.begin() + (k + 1) * kLayoutConfigDim));
                b["node_config_feat"] = rows;
            }
            b["xla"] = xla_config(g, res.best_config);
        } else {
            b["config"] = nullptr;
            b["runtime_ns"] = nullptr;
        }
        write_file_atomically(best_file, dump_json(b) + "\n");
    };

    // Measures one config and appends its line (flushed before the next measurement starts).
    auto take = [&](int64_t round, int64_t config, double predicted) {
        const int64_t one[1] = {config};
        std::vector<Measured> m = measure(std::span<const int64_t>(one, 1));
        SEGRANK_CHECK(m.size() == 1 && m[0].config == config, "--measure ", o.measure,
                      ": returned ", m.size(), " results for config ", config,
                      " (expected one, for that config)");
        note(config, m[0].runtime_ns);
        Json line = Json::object();
        line["round"] = round;
        line["config"] = config;
        line["predicted"] = std::isfinite(predicted) ? Json(predicted) : Json(nullptr);
        line["measured_ns"] = m[0].runtime_ns ? Json(*m[0].runtime_ns) : Json(nullptr);
        if (!m[0].runtime_ns)
            line["error"] = m[0].error.empty() ? std::string("not measured") : m[0].error;
        line["best_ns"] = res.best_ns ? Json(*res.best_ns) : Json(nullptr);
        line["best_config"] = res.best_ns ? Json(res.best_config) : Json(nullptr);
        log << dump_json(line) << '\n';
        log.flush();
        SEGRANK_CHECK(log.good(), meas_file.string(), ": write failed (disk full?)");
        ++res.measured_now;
    };
    auto stopped = [&]() { return o.stop && o.stop->load() != 0; };

    const int64_t before = res.measured;
    if (!measured[static_cast<size_t>(res.default_config)] && res.measured < o.budget &&
        !stopped()) {
        const int64_t d[1] = {res.default_config};
        const std::vector<double> s = model.score(g, std::span<const int64_t>(d, 1));
        take(0, res.default_config, s[0]);
        write_best();
        if (o.progress)
            std::printf("tune: round 0: default config %lld measured: %s\n",
                        static_cast<long long>(res.default_config),
                        res.default_ns ? str(*res.default_ns, " ns").c_str() : "failed");
    }

    const auto task_members = static_cast<int64_t>(model.member_scores(g, {}).size());
    int64_t last_refit_count = -1;
    while (res.measured < o.budget && !stopped()) {
        std::vector<int64_t> open;
        for (int64_t j = 0; j < c; ++j)
            if (!measured[static_cast<size_t>(j)]) open.push_back(j);
        if (open.empty()) break;
        if (o.refit != RefitMode::kNone &&
            static_cast<int64_t>(ok_configs.size()) != last_refit_count) {
            model.refit(g, ok_configs, ok_runtimes,
                        o.refit == RefitMode::kHead ? CostModel::RefitScope::kHead
                                                    : CostModel::RefitScope::kAll,
                        o.refit_steps, o.refit_lr);
            last_refit_count = static_cast<int64_t>(ok_configs.size());
        }
        ++res.rounds;
        const int64_t k =
            std::min({o.batch, o.budget - res.measured, static_cast<int64_t>(open.size())});
        // Scores of the open configs: the ensemble as CostModel::score, plus each member's.
        std::vector<std::vector<float>> ms = model.member_scores(g, open);
        std::vector<double> ens(open.size(), 0.0);
        std::vector<std::vector<double>> norm;
        for (const auto& s : ms) {
            std::vector<double> d(s.begin(), s.end());
            std::vector<double> n = d;
            minmax(n);
            if (model.num_members() > 1) d = n;
            for (size_t i = 0; i < d.size(); ++i) ens[i] += d[i];
            norm.push_back(std::move(n));
        }
        for (auto& x : ens) x /= static_cast<double>(ms.size());
        std::vector<int64_t> order = CostModel::ranking(ens);
        // Exploration: a quarter of the round (at least one config when B >= 2) goes to the open
        // configs where the members disagree most (std of their min-max normalized scores), or,
        // with one member, to configs drawn uniformly from the seed.
        const int64_t explore = k >= 2 ? std::max<int64_t>(1, k / 4) : 0;
        const int64_t exploit = k - explore;
        std::vector<int64_t> picks(order.begin(), order.begin() + exploit);
        std::vector<char> picked(open.size(), 0);
        for (int64_t p : picks) picked[static_cast<size_t>(p)] = 1;
        if (explore > 0) {
            std::vector<int64_t> rest;
            for (size_t i = 0; i < open.size(); ++i)
                if (!picked[i]) rest.push_back(static_cast<int64_t>(i));
            if (task_members >= 2) {
                std::vector<double> spread(open.size(), 0.0);
                for (size_t i = 0; i < open.size(); ++i) {
                    double mean = 0, sq = 0;
                    for (const auto& n : norm) mean += n[i];
                    mean /= static_cast<double>(norm.size());
                    for (const auto& n : norm) sq += (n[i] - mean) * (n[i] - mean);
                    spread[i] = sq / static_cast<double>(norm.size());
                }
                std::stable_sort(rest.begin(), rest.end(),
                                 [&](int64_t a, int64_t b) { return spread[a] > spread[b]; });
            } else {
                Rng rng = Rng::derive(o.seed, static_cast<uint64_t>(res.rounds), 0, "tune_explore");
                for (size_t i = rest.size(); i > 1; --i)
                    std::swap(
                        rest[i - 1],
                        rest[static_cast<size_t>(rng.uniform() * static_cast<double>(i)) % i]);
            }
            for (int64_t i = 0; i < explore && i < static_cast<int64_t>(rest.size()); ++i)
                picks.push_back(rest[static_cast<size_t>(i)]);
        }
        for (int64_t p : picks) {
            if (stopped()) break;
            take(res.rounds, open[static_cast<size_t>(p)], ens[static_cast<size_t>(p)]);
        }
        write_best();
        if (o.progress) {
            std::printf("tune: round %lld: %lld measured (%lld of budget %lld), best %s",
                        static_cast<long long>(res.rounds), static_cast<long long>(picks.size()),
                        static_cast<long long>(res.measured), static_cast<long long>(o.budget),
                        res.best_ns
                            ? str(*res.best_ns, " ns (config ", res.best_config, ")").c_str()
                            : "none");
            if (res.best_ns && res.default_ns)
                std::printf(", %.3fx the default", *res.default_ns / *res.best_ns);
            std::printf("\n");
            std::fflush(stdout);
        }
    }
    if (res.measured_now == 0 || res.measured == before) write_best();
    if (stopped()) res.interrupted_by = o.stop->load();
    return res;
}

}  // namespace segrank::cli
