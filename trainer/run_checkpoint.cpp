// Training checkpoints (DESIGN.md 10): one HDF5 file per checkpoint name in the run directory.
// Layout (format_version 1):
//   /                attrs format_version, step, best_step, best_selection, evals_without_improvement,
//                    world_size, task, config_toml (the effective config)
//   /params/<name>   [rows, cols] f32, one dataset per parameter
//   /optim/m, /optim/v [arena] f32 (AdamW moments in arena layout), attr step_count
//   /normalizer      kept_columns i32 [F'], means f64 [F'], stds f64 [F'], attr input_dim
//   /history/rank_<r> graphs i64 [G], graph_segments i32 [G], keys i64 [E,3], steps i64 [E],
//                    values f32 [E,width], attr width — one shard per rank, written in turn
// Rank 0 writes <name>.ckpt.h5.tmp, every rank appends its shard in rank order, then rank 0 renames,
// so a crash never leaves a torn checkpoint under the final name.
#include <cstdio>
#include <filesystem>

#include "data/h5_file.h"
#include "gnn/core/check.h"
#include "trainer/trainer.h"

namespace segrank {

namespace {
constexpr int64_t kFormatVersion = 1;

template <typename T>
std::span<const T> cspan(const std::vector<T>& v) {
    return {v.data(), v.size()};
}
}  // namespace

Normalizer load_checkpoint_normalizer(const std::filesystem::path& file) {
    H5File f = H5File::open_read(file);
    H5Group g = f.root().open_group("normalizer");
    const auto input_dim = g.attr_int("input_dim");
    SEGRANK_CHECK(input_dim.has_value(), file.string(), ": /normalizer has no input_dim attribute");
    return Normalizer::from_vectors(*input_dim, g.open_dataset("kept_columns").read<int32_t>(),
                                    g.open_dataset("means").read<double>(), g.open_dataset("stds").read<double>(),
                                    file.string());
}

void Trainer::save_checkpoint(const std::string& name) {
    const std::filesystem::path final_path = run_dir_ / (name + ".ckpt.h5");
    const std::filesystem::path tmp = run_dir_ / (name + ".ckpt.h5.tmp");
    if (comm_.rank() == 0) {
        std::filesystem::create_directories(run_dir_);
        H5File f = H5File::create(tmp);
        H5Group root = f.root();
        root.set_attr("format_version", kFormatVersion);
        root.set_attr("step", step_);
        root.set_attr("best_step", best_step_);
        root.set_attr("best_selection", str(best_selection_));
        root.set_attr("evals_without_improvement", static_cast<int64_t>(evals_without_improvement_));
        root.set_attr("world_size", static_cast<int64_t>(comm_.size()));
        root.set_attr("task", std::string(to_string(task_)));
        root.set_attr("config_toml", dump_config(cfg_));
        H5Group params = root.create_group("params");
        const ParamStore& ps = model_->params();
        for (size_t i = 0; i < ps.refs().size(); ++i) {
            const ParamRef& r = ps.refs()[i];
            params.write<float>(r.name, {r.rows, r.cols}, ps.values().subspan(static_cast<size_t>(r.offset),
                                                                               static_cast<size_t>(r.size())));
        }
        H5Group opt = root.create_group("optim");
        opt.set_attr("step_count", optim_->step_count());
        opt.write<float>("m", {static_cast<int64_t>(optim_->m().size())}, optim_->m());
        opt.write<float>("v", {static_cast<int64_t>(optim_->v().size())}, optim_->v());
        H5Group norm = root.create_group("normalizer");
        norm.set_attr("input_dim", normalizer_.input_dim());
        norm.write<int32_t>("kept_columns", {normalizer_.output_dim()}, cspan(normalizer_.kept_columns()));
        norm.write<double>("means", {normalizer_.output_dim()}, cspan(normalizer_.means()));
        norm.write<double>("stds", {normalizer_.output_dim()}, cspan(normalizer_.stds()));
        root.create_group("history");
    }
    // Each rank appends its HistoryTable shard in turn (serial HDF5: one writer at a time).
    for (int r = 0; r < comm_.size(); ++r) {
        comm_.barrier();
        if (r != comm_.rank()) continue;
        H5File f = H5File::open_write(tmp);
        H5Group shard = f.root().open_group("history").create_group(str("rank_", r));
        HistoryArrays a = history_->export_arrays();
        shard.set_attr("width", static_cast<int64_t>(a.width));
        shard.write<int64_t>("graphs", {static_cast<int64_t>(a.graphs.size())}, cspan(a.graphs));
        shard.write<int32_t>("graph_segments", {static_cast<int64_t>(a.graph_segments.size())}, cspan(a.graph_segments));
        shard.write<int64_t>("keys", {a.num_entries(), 3}, cspan(a.keys));
        shard.write<int64_t>("steps", {a.num_entries()}, cspan(a.steps));
        shard.write<float>("values", {a.num_entries(), a.width}, cspan(a.values));
    }
    comm_.barrier();
    if (comm_.rank() == 0) std::filesystem::rename(tmp, final_path);
    comm_.barrier();
}

void Trainer::load_checkpoint(const std::filesystem::path& file) {
    H5File f = H5File::open_read(file);
    H5Group root = f.root();
    const auto version = root.attr_int("format_version");
    SEGRANK_CHECK(version && *version == kFormatVersion, file.string(), ": format_version ",
                  version ? std::to_string(*version) : "missing", ", expected ", kFormatVersion);
    H5Group params = root.open_group("params");
    ParamStore& ps = model_->params();
    for (const auto& r : ps.refs()) {
        SEGRANK_CHECK(params.has(r.name), file.string(), ": parameter '", r.name,
                      "' missing (was the checkpoint written with another model config?)");
        auto ds = params.open_dataset(r.name);
        auto shape = ds.shape();
        SEGRANK_CHECK(shape.size() == 2 && shape[0] == r.rows && shape[1] == r.cols, file.string(), ": parameter '",
                      r.name, "' has another shape than the model's [", r.rows, ", ", r.cols, "]");
        ds.read<float>(ps.values().subspan(static_cast<size_t>(r.offset), static_cast<size_t>(r.size())));
    }
    H5Group opt = root.open_group("optim");
    opt.open_dataset("m").read<float>(optim_->m());
    opt.open_dataset("v").read<float>(optim_->v());
    optim_->set_step_count(opt.attr_int("step_count").value_or(0));
    step_ = root.attr_int("step").value_or(0);
    best_step_ = root.attr_int("best_step").value_or(-1);
    best_selection_ = std::stod(root.attr_string("best_selection").value_or("-1e300"));
    evals_without_improvement_ = static_cast<int>(root.attr_int("evals_without_improvement").value_or(0));
    // History: every shard is read and the entries of graphs this rank owns are kept, so resuming at
    // another world size redistributes the shards.
    H5Group hist = root.open_group("history");
    for (const auto& child : hist.children()) {
        H5Group shard = hist.open_group(child);
        HistoryArrays a;
        a.width = static_cast<int32_t>(shard.attr_int("width").value_or(history_->width()));
        SEGRANK_CHECK(a.width == history_->width(), file.string(), ": history shard ", child, " has width ", a.width,
                      ", the model needs ", history_->width());
        auto graphs = shard.open_dataset("graphs").read<int64_t>();
        auto segs = shard.open_dataset("graph_segments").read<int32_t>();
        auto keys = shard.open_dataset("keys").read<int64_t>();
        auto steps = shard.open_dataset("steps").read<int64_t>();
        auto values = shard.open_dataset("values").read<float>();
        for (size_t i = 0; i < graphs.size(); ++i) {
            if (owner_rank(graphs[i], comm_.size()) != comm_.rank()) continue;
            a.graphs.push_back(graphs[i]);
            a.graph_segments.push_back(segs[i]);
        }
        for (size_t e = 0; e < steps.size(); ++e) {
            if (owner_rank(keys[3 * e], comm_.size()) != comm_.rank()) continue;
            a.keys.insert(a.keys.end(), keys.begin() + static_cast<int64_t>(3 * e), keys.begin() + static_cast<int64_t>(3 * e + 3));
            a.steps.push_back(steps[e]);
            a.values.insert(a.values.end(), values.begin() + static_cast<int64_t>(e) * a.width,
                            values.begin() + static_cast<int64_t>(e + 1) * a.width);
        }
        history_->import_arrays(a);
    }
}

LoadedModel load_model(const std::filesystem::path& path) {
    LoadedModel lm;
    lm.file = path;
    if (std::filesystem::is_directory(path)) {
        lm.file = path / "best.ckpt.h5";
        if (!std::filesystem::exists(lm.file)) lm.file = path / "last.ckpt.h5";
    }
    SEGRANK_CHECK(std::filesystem::is_regular_file(lm.file), "--checkpoint ", path.string(),
                  ": no checkpoint found (expected a run directory with best.ckpt.h5 or last.ckpt.h5, or a .ckpt.h5 file)");
    H5File f = H5File::open_read(lm.file);
    H5Group root = f.root();
    const auto version = root.attr_int("format_version");
    SEGRANK_CHECK(version && *version == kFormatVersion, lm.file.string(), ": not a segrank checkpoint (format_version ",
                  version ? std::to_string(*version) : "missing", ", expected ", kFormatVersion, ")");
    const auto text = root.attr_string("config_toml");
    SEGRANK_CHECK(text.has_value(), lm.file.string(), ": checkpoint has no config_toml attribute");
    lm.cfg = load_config_string(*text, lm.file.string() + ":config_toml");
    lm.task = parse_task(root.attr_string("task").value_or("layout"));
    lm.normalizer = load_checkpoint_normalizer(lm.file);
    lm.model = std::make_unique<Model>(model_config_from(lm.cfg, lm.task, lm.normalizer.output_dim()));
    H5Group params = root.open_group("params");
    ParamStore& ps = lm.model->params();
    for (const auto& r : ps.refs()) {
        SEGRANK_CHECK(params.has(r.name), lm.file.string(), ": parameter '", r.name, "' missing");
        auto ds = params.open_dataset(r.name);
        auto shape = ds.shape();
        SEGRANK_CHECK(shape.size() == 2 && shape[0] == r.rows && shape[1] == r.cols, lm.file.string(),
                      ": parameter '", r.name, "' has another shape than the model's [", r.rows, ", ", r.cols, "]");
        ds.read<float>(ps.values().subspan(static_cast<size_t>(r.offset), static_cast<size_t>(r.size())));
    }
    return lm;
}

}  // namespace segrank
