// The files of a `segrank tune` directory: tune.json, measurements.jsonl (read back on --resume)
// and best.json, and the graph of configs that are rows of no file (cli/tune_files.h,
// docs/tune.md).
#include "cli/tune_files.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <memory>
#include <set>
#include <sstream>

#include "api/cost_model_internal.h"
#include "gnn/core/check.h"
#include "gnn/core/hash.h"
#include "tune/measure.h"
#include "tune/measurements_file.h"
#include "util/atomic_file.h"
#include "util/user_input.h"

namespace segrank::cli {

namespace fs = std::filesystem;

std::unique_ptr<CreatedDirectories> create_out_dir(const std::filesystem::path& out) {
    try {
        return std::make_unique<CreatedDirectories>(out);
    } catch (const Error& e) {
        throw Error(str("--out ", out.string(), ": cannot create the directory (", e.what(), ")"));
    }
}

Graph graph_of_configs(const tune::TuneGraph& r, const std::vector<tune::Config>& cs) {
    SEGRANK_CHECK(!cs.empty(), "tune: no configs to score");
    const auto k = static_cast<int64_t>(cs.size());
    auto copy_structure = [](const GraphStructure& from, GraphStructure& to) {
        to.name = from.name;
        to.source = from.source;
        to.node_feat = from.node_feat.clone();
        to.node_opcode = from.node_opcode;
        to.edge_index = from.edge_index;
    };
    const std::string where = str(r.name, " (", k, " candidate configs)");
    if (r.task == Task::kTile) {
        TileGraph t;
        copy_structure(r.tile, t);
        t.config_feat = Tensor(k, kTileConfigDim);
        for (int64_t i = 0; i < k; ++i)
            std::copy(cs[static_cast<size_t>(i)].tile.begin(),
                      cs[static_cast<size_t>(i)].tile.end(),
                      t.config_feat.data() + i * kTileConfigDim);
        t.config_runtime.assign(static_cast<size_t>(k), 0);
        t.config_runtime_normalizers.assign(static_cast<size_t>(k), 1);
        return graph_from_record(std::move(t), where);
    }
    LayoutGraph l;
    copy_structure(r.layout, l);
    l.node_config_ids = r.layout.node_config_ids;
    l.node_splits = r.layout.node_splits;
    for (const auto& c : cs)
        l.node_config_feat.insert(l.node_config_feat.end(), c.layout.begin(), c.layout.end());
    l.config_runtime.assign(static_cast<size_t>(k), 0);
    return graph_from_record(std::move(l), where);
}

namespace {

// XXH3-64 over every array of the graph file's record, each with its byte length, in a fixed order:
// node_feat, node_opcode, edge_index, node_loop_trips, then tile config_feat, config_runtime and
// config_runtime_normalizers, or layout node_config_ids, node_splits, node_config_feat and
// config_runtime. Another config row, feature or edge gives another digest.
std::string record_digest(const tune::TuneGraph& r) {
    std::vector<uint64_t> parts;
    const auto add = [&](const void* p, size_t bytes) {
        parts.push_back(bytes);
        parts.push_back(xxh3_64(p, bytes));
    };
    const GraphStructure& s = r.task == Task::kTile ? static_cast<const GraphStructure&>(r.tile)
                                                    : static_cast<const GraphStructure&>(r.layout);
    add(s.node_feat.data(), static_cast<size_t>(s.node_feat.size()) * sizeof(float));
    add(s.node_opcode.data(), s.node_opcode.size() * sizeof(int32_t));
    add(s.edge_index.data(), s.edge_index.size() * sizeof(int64_t));
    if (r.task == Task::kTile) {
        add(r.tile.config_feat.data(), static_cast<size_t>(r.tile.config_feat.size()) * 4);
        add(r.tile.config_runtime.data(), r.tile.config_runtime.size() * 8);
        add(r.tile.config_runtime_normalizers.data(), r.tile.config_runtime_normalizers.size() * 8);
    } else {
        add(r.layout.node_loop_trips.data(), r.layout.node_loop_trips.size() * 4);
        add(r.layout.node_config_ids.data(), r.layout.node_config_ids.size() * 8);
        add(r.layout.node_splits.data(), r.layout.node_splits.size() * 8);
        add(r.layout.node_config_feat.data(), r.layout.node_config_feat.size());
        add(r.layout.config_runtime.data(), r.layout.config_runtime.size() * 8);
    }
    return str("xxh3_64:", hash_hex(xxh3_64(parts.data(), parts.size() * sizeof(uint64_t))));
}

}  // namespace

Json graph_identity(const Graph& g, const tune::TuneGraph& record) {
    uint64_t h = 1469598103934665603ULL;
    for (int64_t r : g.runtimes_ns()) h = (h ^ static_cast<uint64_t>(r)) * 1099511628211ULL;
    Json j = Json::object();
    j["name"] = g.name();
    j["task"] = cost_task_name(g.task());
    j["num_nodes"] = g.num_nodes();
    j["num_configs"] = g.num_configs();
    j["num_config_nodes"] = g.num_config_nodes();
    j["runtimes_fnv1a"] = str(std::hex, h);
    j["content"] = record_digest(record);
    return j;
}

Json rows_json(const tune::Config& c) {
    if (c.task() == Task::kTile) return c.tile;
    Json rows = Json::array();
    for (size_t k = 0; k < c.layout.size() / kLayoutConfigDim; ++k)
        rows.push_back(std::vector<int>(c.layout.begin() + k * kLayoutConfigDim,
                                        c.layout.begin() + (k + 1) * kLayoutConfigDim));
    return rows;
}

namespace {

// The inverse of rows_json for graph `r`; throws naming `at` when the rows do not fit the graph.
tune::Config config_from_json(const Json& j, const tune::TuneGraph& r, const std::string& at) {
    tune::Config c;
    if (r.task == Task::kTile) {
        SEGRANK_CHECK(j.is_array() && j.size() == kTileConfigDim, at,
                      ": \"rows\" must be 24 numbers (a tile config_feat row)");
        for (const auto& v : j) {
            SEGRANK_CHECK(v.is_number(), at, ": \"rows\" must be 24 numbers");
            c.tile.push_back(v.get<float>());
        }
        return c;
    }
    const auto nc = static_cast<size_t>(r.layout.num_config_nodes());
    SEGRANK_CHECK(j.is_array() && j.size() == nc, at, ": \"rows\" must be ", nc,
                  " rows of 18 integers (one per configurable node)");
    for (const auto& row : j) {
        SEGRANK_CHECK(row.is_array() && row.size() == kLayoutConfigDim, at,
                      ": \"rows\" must be rows of 18 integers");
        for (const auto& v : row) {
            SEGRANK_CHECK(v.is_number_integer() && v.get<int>() >= -1 && v.get<int>() <= 127, at,
                          ": layout values must be integers -1..127");
            c.layout.push_back(static_cast<int8_t>(v.get<int>()));
        }
    }
    return c;
}

// Reads DIR/measurements.jsonl with the writer's rules (tune::read_measurements_file, shared with
// segrank report); a torn last line (a kill mid-write) is dropped and the file rewritten without
// it. A line names its config by "rows", else by "config" (an index of r).
std::vector<Record> read_measurements(const fs::path& file, const tune::TuneGraph& r) {
    // tune.json's graph (num_configs included) equals the loaded graph's (checked by the caller).
    const tune::ConfigBound bound{
        .num_configs = r.num_recorded(),
        .source = "",
        .task = r.task == Task::kTile ? "tile" : "layout",
        .num_config_nodes = r.task == Task::kTile ? int64_t{0} : r.layout.num_config_nodes()};
    const tune::MeasurementsFile mf = tune::read_measurements_file(file, bound);
    const std::vector<bool> explored = tune::exploration_picks(mf.lines);
    std::vector<Record> out;
    std::set<std::string> seen;
    for (const tune::MeasurementLine& m : mf.lines) {
        const std::string at = str(file.string(), ":", m.line);
        Record rec;
        rec.round = m.round;
        if (m.rows) {
            rec.config = config_from_json(*m.rows, r, at);
        } else {
            rec.config = r.recorded_config(*m.config);
        }
        SEGRANK_CHECK(seen.insert(tune::config_key(rec.config)).second, at, ": config ",
                      tune::describe(rec.config), " is measured twice");
        rec.runtime_ns = m.measured_ns;
        rec.error = m.error;
        rec.explored = explored[out.size()];
        out.push_back(std::move(rec));
    }
    if (mf.torn) write_file_atomically(file, mf.kept);
    return out;
}

// The measurement backend a --measure text and --noise name, as compared on --resume: "hwmodel"
// and "hwmodel:default" are one backend, and --noise changes hwmodel's runtimes only.
std::string measure_backend(const std::string& measure, double noise) {
    if (measure != "hwmodel" && measure.rfind("hwmodel:", 0) != 0) return measure;
    const tune::MeasureSpec spec = tune::parse_measure_spec(measure);
    return str("hwmodel:", spec.arg.empty() ? std::string("default") : spec.arg, " with --noise ",
               noise);
}

// On --resume: the run in DIR (its tune.json `old`) measured with the backend of `o`; runtimes of
// two backends are not comparable. Throws naming both.
void check_same_measure(const Json& old, const TuneOptions& o) {
    const std::string old_measure = json_string(old, "measure").value_or("recorded");
    double old_noise = 0.0;
    if (old.contains("noise") && old["noise"].is_number()) old_noise = old["noise"].get<double>();
    const std::string was = measure_backend(old_measure, old_noise);
    const std::string now = measure_backend(o.measure, o.noise);
    SEGRANK_CHECK(was == now, "--resume ", o.out.string(), ": the run was measured with --measure ",
                  was, ", not ", now,
                  " (runtimes of different measurements are not comparable; start a new --out)");
}

// On --resume: a note when best.json (a tune's, written after each measurement) counts more
// measurements than measurements.jsonl still holds (a file emptied or cut by hand or by a disk
// error): the lost ones are not known any more and may be measured again.
void note_lost_measurements(const fs::path& dir, size_t kept) {
    const fs::path best = dir / "best.json";
    std::error_code ec;
    if (!fs::is_regular_file(best, ec)) return;
    int64_t recorded = -1;
    try {
        const Json b = read_json_file(best);
        if (b.is_object() && b.contains("measured") && b["measured"].is_number_integer())
            recorded = b["measured"].get<int64_t>();
    } catch (const std::exception&) {
        return;  // best.json is rewritten at the end; its damage is not this note's
    }
    if (recorded > static_cast<int64_t>(kept))
        std::fprintf(stderr,
                     "segrank tune: note: --resume %s: measurements.jsonl holds %zu measurements, "
                     "but best.json records %lld: the %lld missing ones are lost and may be "
                     "measured again\n",
                     dir.string().c_str(), kept, static_cast<long long>(recorded),
                     static_cast<long long>(recorded - static_cast<int64_t>(kept)));
}

// The settings that choose a run's picks besides the model (docs/tune.md#resume): tune.json keeps
// the first run's.
Json schedule_settings(const TuneOptions& o) {
    Json j = Json::object();
    j["seed"] = o.seed;
    j["batch"] = o.batch.spelling();
    j["refit"] = o.refit == RefitMode::kNone   ? "none"
                 : o.refit == RefitMode::kHead ? "head"
                                               : "full";
    j["refit_steps"] = o.refit_steps;
    j["budget"] = o.budget;
    return j;
}

// On --resume: a note naming every schedule setting (schedule_settings) but the budget that this
// run changes: the
// measurements stay valid, but the picks from here on are not those of the uninterrupted run.
// Settings the older tune.json does not record are not compared.
void note_changed_schedule(const Json& old, const TuneOptions& o) {
    const Json now = schedule_settings(o);
    const auto shown = [](const Json& v) {
        return echo_value(v.is_string() ? v.get<std::string>() : dump_json(v), 200);
    };
    std::string changed;
    for (const auto& [key, value] : now.items()) {
        // A larger --budget, to measure more, is the common resume: recorded, not noted (its
        // effect on the schedule is docs/tune.md's).
        if (key == "budget" || !old.contains(key) || old[key] == value) continue;
        const std::string option = key == "refit_steps" ? "--refit-steps" : "--" + key;
        changed += str(changed.empty() ? "" : ", ", option, " ", shown(value),
                       " (the run: ", shown(old[key]), ")");
    }
    if (!changed.empty())
        std::fprintf(stderr,
                     "segrank tune: note: --resume %s: this run uses %s; every measurement is "
                     "kept, but the picks from here on differ from those of the uninterrupted "
                     "run\n",
                     o.out.string().c_str(), changed.c_str());
}

}  // namespace

std::vector<Record> open_tune_dir(const TuneOptions& o, const Graph& g, const Json& ident,
                                  const std::string& mode, const CostModel* model,
                                  const tune::TuneGraph& record) {
    const fs::path meas_file = o.out / "measurements.jsonl";
    const fs::path ident_file = o.out / "tune.json";
    if (o.resume) {
        SEGRANK_CHECK(fs::is_regular_file(ident_file), "--resume ", o.out.string(),
                      ": no tune.json (not a segrank tune directory)");
        const Json old = read_json_file(ident_file);
        // The rules report applies too (tune/measurements_file.h): enums, signs, counts.
        (void)tune::check_tune_json(old, ident_file.string());
        // A directory written before "content" was recorded is compared without it.
        Json same = ident;
        if (old.contains("graph") && old["graph"].is_object() &&
            !old["graph"].contains("content")) {
            same.erase("content");
            std::fprintf(stderr,
                         "segrank tune: note: --resume %s: its tune.json was written before tune "
                         "recorded the graph file's content, so a graph changed since under the "
                         "same name, sizes and runtimes is not detected\n",
                         o.out.string().c_str());
        }
        SEGRANK_CHECK(old.contains("graph") && old["graph"] == same, "--resume ", o.out.string(),
                      ": the directory holds measurements of another graph (",
                      old.contains("graph") ? dump_json(old["graph"]) : std::string("none"),
                      "), not of ", g.where(), " (", dump_json(ident), ")");
        const std::string old_mode = json_string(old, "candidates").value_or("recorded");
        SEGRANK_CHECK(old_mode == mode, "--resume ", o.out.string(), ": the run used --candidates ",
                      old_mode, ", not ", mode);
        check_same_measure(old, o);
        note_changed_schedule(old, o);
        // Another model may continue a run (a retrained checkpoint): said, since tune.json keeps
        // the first run's checkpoints.
        Json now = Json::array();
        if (model)
            for (size_t m = 0; m < model->num_members(); ++m) now.push_back(model->checkpoint(m));
        if (old.contains("checkpoints") && old["checkpoints"] != now)
            std::fprintf(stderr,
                         "segrank tune: note: --resume %s: tune.json names the checkpoints %s; "
                         "this run ranks with %s, which choose the rounds from here on\n",
                         o.out.string().c_str(),
                         echo_value(dump_json(old["checkpoints"]), 2000).c_str(),
                         echo_value(dump_json(now), 2000).c_str());
        std::vector<Record> records = read_measurements(meas_file, record);
        note_lost_measurements(o.out, records.size());
        return records;
    } else {
        SEGRANK_CHECK(!fs::exists(ident_file) && !fs::exists(meas_file), "--out ", o.out.string(),
                      " already holds a tuning run (tune.json / measurements.jsonl): continue it "
                      "with --resume or choose another directory");
        // The folders made here are removed again when tune.json cannot be written (a full disk):
        // a failed run leaves no empty --out behind (docs/files.md).
        std::unique_ptr<CreatedDirectories> made = create_out_dir(o.out);
        Json j = Json::object();
        j["graph"] = ident;
        j["where"] = g.where();
        j["measure"] = o.measure;
        j["noise"] = o.noise;
        j["candidates"] = mode;
        j["strategy"] = strategy_name(o.strategy);
        const Json settings = schedule_settings(o);
        for (const auto& [key, value] : settings.items()) j[key] = value;
        Json ck = Json::array();
        if (model)
            for (size_t m = 0; m < model->num_members(); ++m) ck.push_back(model->checkpoint(m));
        j["checkpoints"] = ck;
        write_file_atomically(ident_file, dump_json(j) + "\n");
        made->keep();
    }
    return {};
}

void write_best_json(const fs::path& file, const Graph& g, const TuneResult& res,
                     const std::string& rule, std::span<const int64_t> nodes) {
    Json b = Json::object();
    b["graph"] = g.where();
    b["measured"] = res.measured;
    b["default_config"] = res.default_config;
    b["default_rule"] = rule;
    b["default_runtime_ns"] = res.default_ns ? Json(*res.default_ns) : Json(nullptr);
    if (res.best_ns) {
        b["config"] = res.best_config >= 0 ? Json(res.best_config) : Json(nullptr);
        b["runtime_ns"] = *res.best_ns;
        b["speedup_over_default"] =
            res.default_ns ? Json(*res.default_ns / *res.best_ns) : Json(nullptr);
        b[g.task() == CostTask::kTile ? "config_feat" : "node_config_feat"] = rows_json(*res.best);
        b["xla"] = xla_config(*res.best, nodes);
    } else {
        b["config"] = nullptr;
        b["runtime_ns"] = nullptr;
    }
    write_file_atomically(file, dump_json(b) + "\n");
}

}  // namespace segrank::cli
