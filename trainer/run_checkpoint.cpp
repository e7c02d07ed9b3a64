// Training checkpoints of a run (docs/files.md#checkpoints), written through CheckpointWriter
// (trainer/checkpoint.h: /params, /adam_m, /adam_v, step, epoch, format_version, temp + rename):
//   /extra attrs     best_step, best_selection, evals_without_improvement, world_size, task,
//                    config_toml (the effective config), history_ranks, eval_indices_digest
//   /extra/normalizer/{kept_columns i32 [F'], means f64 [F'], stds f64 [F']}, attr
//   normalizer_input_dim /extra/history/rank_<r>/{graphs i64 [G], graph_segments i32 [G], keys i64
//   [E,3], steps i64 [E],
//                    values f32 [E,width]} — every rank's HistoryTable shard, gathered to rank 0
//   /extra/data/manifest u8 [n] (data_manifest text: one line per train/eval graph with its sizes),
//                    attr data_fingerprint (FNV-1a of it), checked on --resume (trainer/run_dir.h)
// Rank 0 writes the file. Loading keeps the history entries of the graphs this rank owns
// (dist.ownership at the current world size), so a run resumed at another world size or ownership
// redistributes the shards; under "per_step" every rank keeps every entry and writes the graphs it
// is home to (Ownership::owner), so the shards hold each entry once.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <new>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "data/graph_store.h"
#include "gnn/core/check.h"
#include "gnn/core/format.h"
#include "gnn/param_store.h"
#include "trainer/checkpoint.h"
#include "trainer/checkpoint_resume.h"
#include "trainer/history_share.h"
#include "trainer/run_dir.h"
#include "trainer/trainer.h"
#include "util/atomic_file.h"
#include "util/json.h"
#include "util/user_input.h"

namespace segrank {

namespace {

template <typename T>
std::span<const T> cspan(const std::vector<T>& v) {
    return {v.data(), v.size()};
}

// Refuses a stored data manifest (/extra/data/manifest of `file`) that is not what data_manifest
// writes: every line `train|eval \t collection \t name \t nodes \t edges \t configs`, then
// optionally `configs=<hex>` and `graph=<hex>` (older checkpoints lack them), no graph listed twice
// for a role. Checked before the manifest is compared with the data, so a damaged one is not
// reported as other data (a repeated line as a graph missing from the data).
void check_manifest_format(std::string_view text, const std::filesystem::path& file) {
    const std::string head =
        str(file.string(), ": dataset /extra/data/manifest: not a data manifest (");
    SEGRANK_CHECK(!text.empty(), head, "it is empty; expected one line per graph of the run)");
    auto decimal = [](const std::string& v) {
        return !v.empty() && v.size() <= 19 && v.find_first_not_of("0123456789") == v.npos;
    };
    auto hex_after = [](const std::string& v, std::string_view prefix) {
        return v.size() > prefix.size() && v.starts_with(prefix) &&
               v.find_first_not_of("0123456789abcdef", prefix.size()) == v.npos;
    };
    std::istringstream is{std::string(text)};
    int64_t line_no = 0;
    std::unordered_map<std::string, int64_t> first_line;  // role \t collection \t name -> line
    for (std::string line; std::getline(is, line);) {
        ++line_no;
        if (line.empty()) continue;
        std::vector<std::string> f;
        std::istringstream ls(line);
        for (std::string field; std::getline(ls, field, '\t');) f.push_back(field);
        f.resize(std::max<size_t>(f.size(), 6));
        const bool ok = f.size() <= 8 && (f[0] == "train" || f[0] == "eval") && !f[1].empty() &&
                        !f[2].empty() && decimal(f[3]) && decimal(f[4]) && decimal(f[5]) &&
                        (f.size() < 7 || hex_after(f[6], "configs=")) &&
                        (f.size() < 8 || hex_after(f[7], "graph="));
        SEGRANK_CHECK(ok, head, "line ", line_no, " is \"", echo_value(line), "\"",
                      "; expected train|eval, collection, name, nodes, edges, configs, then "
                      "configs=<hex> and graph=<hex>, separated by tabs)");
        // data_manifest writes each graph of the run once per role.
        const auto [it, fresh] = first_line.try_emplace(f[0] + '\t' + f[1] + '\t' + f[2], line_no);
        SEGRANK_CHECK(fresh, file.string(), ": dataset /extra/data/manifest: line ", line_no,
                      " repeats ", f[0], " graph ", echo_value(f[2]), " (", echo_value(f[1]),
                      ") of line ", it->second,
                      " (a data manifest lists each graph of the run once)");
    }
}

Normalizer read_normalizer(const CheckpointReader& r, const std::filesystem::path& file) {
    const auto input_dim = r.attr_int("normalizer_input_dim");
    SEGRANK_CHECK(input_dim.has_value(), file.string(),
                  ": no normalizer_input_dim attribute (not a training checkpoint)");
    // Every normalizer is fitted on the node_feat columns (trainer.cpp fit_normalizer).
    SEGRANK_CHECK(*input_dim == kNodeFeatDim, file.string(),
                  ": attribute /extra/normalizer_input_dim = ", *input_dim, ": expected ",
                  kNodeFeatDim, " (the node feature count, docs/files.md#node-features)");
    return Normalizer::from_vectors(*input_dim, r.get_array<int32_t>("normalizer/kept_columns"),
                                    r.get_array<double>("normalizer/means"),
                                    r.get_array<double>("normalizer/stds"), file.string());
}

}  // namespace

int64_t truncate_metrics_jsonl(const std::filesystem::path& file, int64_t step,
                               int64_t* last_kept) {
    std::string kept;
    int64_t dropped = 0;
    double last = 0.0;
    {
        std::ifstream in(file);
        for (std::string line; std::getline(in, line);) {
            if (line.empty()) continue;
            double at = 0.0;  // NaN for a line without a step (kept)
            bool summary = false;
            try {
                const Json v = read_json(line, file.string());
                at = json_number_or_nan(v, "step");
                summary = json_string(v, "phase") == std::optional<std::string>("random_baseline");
            } catch (const Error&) {
                ++dropped;  // a line torn by a crash
                continue;
            }
            if (summary || at > static_cast<double>(step)) {
                ++dropped;
                continue;
            }
            if (at > last) last = at;  // NaN (no step) compares false
            kept += line;
            kept += '\n';
        }
    }
    write_file_atomically(file, kept);
    if (last_kept) *last_kept = static_cast<int64_t>(last);
    return dropped;
}

std::string missing_history_note(const std::filesystem::path& run_dir, int64_t step,
                                 int64_t last_kept, int64_t interval) {
    if (step - last_kept < std::max<int64_t>(interval, 1)) return "";
    const std::string file = (run_dir / "metrics.jsonl").string();
    return str("segrank train: note: --resume ", run_dir.string(), ": ", file,
               last_kept > 0 ? str(" holds no lines after step ", last_kept)
                             : std::string(" holds no lines"),
               ", but the checkpoint is at step ", step,
               " (the file was emptied or truncated since): the curves of steps ", last_kept + 1,
               "..", step,
               " are gone from the run's report; the model is intact and training continues from "
               "step ",
               step);
}

Normalizer load_checkpoint_normalizer(const std::filesystem::path& file) {
    return read_normalizer(CheckpointReader(file), file);
}

void Trainer::save_checkpoint(const std::string& name) {
    // per_step: every rank holds every row; each writes the graphs it is home to (owner()).
    const bool replicas = owners_.mode() == OwnershipMode::kPerStep;
    auto shards = comm_.gather(pack_history(replicas ? history_->export_arrays([&](int64_t g) {
                                   return owners_.owner(g) == comm_.rank();
                               })
                                                     : history_->export_arrays()),
                               0);
    if (comm_.rank() == 0) {
        std::filesystem::create_directories(run_dir_);
        CheckpointWriter w(run_dir_ / (name + ".ckpt.h5"));
        w.put_params(model_->params(), optim_.get());
        w.put_state(step_, step_ > 0 ? batches_->position(step_ - 1).epoch : 0);
        w.put_attr("best_step", sel_.best_step);
        char best[32];  // 17 significant digits round-trip; "inf" parses back too
        std::snprintf(best, sizeof best, "%.17g", sel_.best);
        w.put_attr("best_selection", std::string(best));
        w.put_attr("evals_without_improvement", sel_.evals_without_improvement);
        w.put_attr("world_size", static_cast<int64_t>(comm_.size()));
        w.put_attr("task", std::string(to_string(task_)));
        w.put_attr("config_toml", dump_config(cfg_));
        w.put_attr("eval_indices_digest", eval_indices_content_);
        w.put_attr("normalizer_input_dim", normalizer_.input_dim());
        w.put_array<int32_t>("normalizer/kept_columns", {normalizer_.output_dim()},
                             cspan(normalizer_.kept_columns()));
        w.put_array<double>("normalizer/means", {normalizer_.output_dim()},
                            cspan(normalizer_.means()));
        w.put_array<double>("normalizer/stds", {normalizer_.output_dim()},
                            cspan(normalizer_.stds()));
        const std::string& manifest = data_manifest_;
        w.put_attr("data_fingerprint", data_fingerprint(manifest));
        w.put_array<uint8_t>("data/manifest", {static_cast<int64_t>(manifest.size())},
                             {reinterpret_cast<const uint8_t*>(manifest.data()), manifest.size()});
        w.put_attr("history_ranks", static_cast<int64_t>(shards.size()));
        for (size_t r = 0; r < shards.size(); ++r) {
            const HistoryArrays a = unpack_history(shards[r]);
            const std::string g = str("history/rank_", r, "/");
            w.put_array<int64_t>(g + "graphs", {static_cast<int64_t>(a.graphs.size())},
                                 cspan(a.graphs));
            w.put_array<int32_t>(g + "graph_segments",
                                 {static_cast<int64_t>(a.graph_segments.size())},
                                 cspan(a.graph_segments));
            w.put_array<int64_t>(g + "keys", {a.num_entries(), 3}, cspan(a.keys));
            w.put_array<int64_t>(g + "steps", {a.num_entries()}, cspan(a.steps));
            w.put_array<float>(g + "values", {a.num_entries(), a.width}, cspan(a.values));
        }
        w.commit();
    }
    comm_.barrier();
}

void Trainer::check_checkpoint_data(const std::filesystem::path& file) {
    CheckpointReader r(file);
    if (!r.has_array("data/manifest")) {
        if (comm_.rank() == 0)
            std::fprintf(
                stderr,
                "segrank train: warning: %s has no data fingerprint (written by an older segrank); "
                "the data is not checked against the run's\n",
                file.string().c_str());
        return;
    }
    const auto bytes = r.get_array<uint8_t>("data/manifest");
    check_manifest_format(
        std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), file);
    check_data_manifest(std::string(bytes.begin(), bytes.end()), data_manifest_, dataset_->train(),
                        dataset_->eval(), file);
}

void Trainer::load_checkpoint(const std::filesystem::path& file) {
    CheckpointReader r(file);
    r.load_params(model_->params(), optim_.get());
    step_ = r.step();
    ResumeTarget target;
    target.step = step_;
    target.task = std::string(to_string(task_));
    target.width = history_->width();
    // The metric the checkpoint's best_selection was measured in (eval.* may change on resume).
    resumed_eval_indices_ = r.attr_string("eval_indices_digest");
    const auto stored = r.attr_string("config_toml");
    target.metric = stored ? load_stored_config(*stored, file.string() + ":config_toml").eval.metric
                           : cfg_.eval.metric;
    for (const GraphEntry& e : dataset_->train()) {
        SEGRANK_ASSERT(e.id == static_cast<int64_t>(target.num_nodes.size()),
                       "training graph ids are their positions");
        target.num_nodes.push_back(e.info.num_nodes);
        target.num_configs.push_back(e.info.num_configs);
    }
    const ResumeState state = read_resume_state(r, file, target);
    sel_ = state.selection;
    // per_step keeps every entry on every rank (any rank may train any graph).
    const auto keep = [&](int64_t g) {
        return owners_.mode() == OwnershipMode::kPerStep || owners_.owner(g) == comm_.rank();
    };
    for (int64_t s = 0; s < state.history_ranks; ++s) {
        // Every dataset of the shard checked against the others and this run before any is used.
        const HistoryArrays all = read_history_shard(r, file, s, target);
        HistoryArrays a;
        a.width = all.width;
        for (size_t i = 0; i < all.graphs.size(); ++i) {
            if (!keep(all.graphs[i])) continue;
            a.graphs.push_back(all.graphs[i]);
            a.graph_segments.push_back(all.graph_segments[i]);
        }
        const auto w = static_cast<size_t>(a.width);
        for (size_t e = 0; e < all.steps.size(); ++e) {
            if (!keep(all.keys[3 * e])) continue;
            a.keys.insert(a.keys.end(), all.keys.begin() + static_cast<std::ptrdiff_t>(3 * e),
                          all.keys.begin() + static_cast<std::ptrdiff_t>(3 * e + 3));
            a.steps.push_back(all.steps[e]);
            a.values.insert(a.values.end(), all.values.begin() + static_cast<std::ptrdiff_t>(e * w),
                            all.values.begin() + static_cast<std::ptrdiff_t>((e + 1) * w));
        }
        // What remains is the table's own limit (segments.history_max_mb), named with the file.
        try {
            history_->import_arrays(a);
        } catch (const Error& e) {
            throw Error(str(file.string(), ": /extra/history/rank_", s, ": ", e.what()));
        }
    }
}

namespace {

// A checkpoint is an HDF5 file: anything else given as --checkpoint (an npz graph file, a CSV, ...)
// is named as what it is, with what --checkpoint takes, before HDF5 is asked to open it.
void refuse_non_hdf5_checkpoint(const std::filesystem::path& given,
                                const std::filesystem::path& file) {
    require_readable_input(file, "a segrank checkpoint (.ckpt.h5)");
    if (is_hdf5_file(file)) return;
    std::ifstream in(file, std::ios::binary);
    char head[4] = {};
    in.read(head, sizeof head);
    const bool zip =
        in.gcount() == 4 && std::string_view(head, 4) == std::string_view("PK\x03\x04", 4);
    throw Error(str("--checkpoint ", given.string(), ": is ",
                    zip ? "an npz file (a zip archive: a graph file, not a checkpoint)"
                        : "not an HDF5 file, so not a checkpoint",
                    "; --checkpoint takes a run directory of segrank train (its best.ckpt.h5, "
                    "else last.ckpt.h5) or one of its .ckpt.h5 files"));
}

// "LOADING FILE: out of memory while building its model (N parameters, M MiB): ...; the
// checkpoint's model.hidden = H and model.layers = L ..." (docs/config.md#out-of-memory). `floats`
// is the parameter arena's size, or < 0 when unknown.
std::string checkpoint_oom_message(const LoadedModel& lm, int64_t floats) {
    std::string size;
    // Inference holds the values and (for a refit) gradients: name the values' fp32 size.
    if (floats >= 0)
        size = str(" (", floats, " parameters, ", (floats * 4 + (1 << 20) - 1) >> 20, " MiB)");
    return str(lm.file.string(), ": out of memory while building the checkpoint's model", size,
               ": an allocation failed; its memory grows with the model.hidden = ",
               lm.cfg.model.hidden, " and model.layers = ", lm.cfg.model.layers,
               " it was trained with; give the process more memory");
}

}  // namespace

LoadedModel load_model(const std::filesystem::path& path) {
    LoadedModel lm;
    lm.file = path;
    if (std::filesystem::is_directory(path)) {
        lm.file = path / "best.ckpt.h5";
        if (!std::filesystem::exists(lm.file)) lm.file = path / "last.ckpt.h5";
    }
    SEGRANK_CHECK(std::filesystem::is_regular_file(lm.file), "--checkpoint ", path.string(),
                  ": no checkpoint found (expected a run directory with best.ckpt.h5 or "
                  "last.ckpt.h5, or a .ckpt.h5 file)");
    refuse_non_hdf5_checkpoint(path, lm.file);
    CheckpointReader r(lm.file);
    const auto text = r.attr_string("config_toml");
    SEGRANK_CHECK(text.has_value(), lm.file.string(),
                  ": checkpoint has no config_toml attribute (not a training run)");
    lm.cfg = load_stored_config(*text, lm.file.string() + ":config_toml");
    try {
        lm.task = parse_task(r.attr_string("task").value_or("layout"));
    } catch (const Error& e) {
        throw Error(str(lm.file.string(), ": attribute /extra/task: ", e.what()));
    }
    lm.normalizer = read_normalizer(r, lm.file);
    lm.parameters_id = r.parameters_id();
    apply_model_precision(lm.cfg, true);  // the precision the model was trained with
    try {
        lm.model =
            std::make_unique<Model>(model_config_from(lm.cfg, lm.task, lm.normalizer.output_dim()));
        r.load_params(lm.model->params(), nullptr);
    } catch (const ParamArenaOutOfMemory& e) {
        throw Error(checkpoint_oom_message(lm, e.floats()));
    } catch (const std::bad_alloc&) {
        throw Error(checkpoint_oom_message(lm, lm.model ? lm.model->params().total_size() : -1));
    }
    return lm;
}

}  // namespace segrank
