// Checked reading of a training checkpoint's resume state and history shards
// (trainer/checkpoint_resume.h, docs/files.md#checkpoints).
#include "trainer/checkpoint_resume.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <limits>
#include <unordered_map>

#include "eval/selection_range.h"
#include "gnn/core/check.h"

namespace segrank {

namespace {

// "[3, 4]" (an empty shape: "[]").
std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += str(i ? ", " : "", shape[i]);
    return s + "]";
}

// One history dataset: its path for messages and its shape.
struct ShardDataset {
    std::string name;   // "history/rank_<r>/<leaf>" under /extra
    std::string where;  // "<file>: dataset /extra/history/rank_<r>/<leaf>"
    std::vector<int64_t> shape;
};

ShardDataset shard_dataset(const CheckpointReader& r, const std::filesystem::path& file,
                           int64_t shard, const std::string& leaf) {
    ShardDataset d;
    d.name = str("history/rank_", shard, "/", leaf);
    d.where = str(file.string(), ": dataset /extra/", d.name);
    SEGRANK_CHECK(r.has_array(d.name), d.where,
                  ": missing (every history shard has graphs, graph_segments, keys, steps and "
                  "values)");
    d.shape = r.array_shape(d.name);
    return d;
}

// Checks the shape of d against `expected` (-1 = any extent), naming both.
void check_shape(const ShardDataset& d, const std::vector<int64_t>& expected,
                 const std::string& expected_text) {
    bool ok = d.shape.size() == expected.size();
    for (size_t i = 0; ok && i < expected.size(); ++i)
        ok = expected[i] < 0 || d.shape[i] == expected[i];
    SEGRANK_CHECK(ok, d.where, ": shape ", shape_text(d.shape), ", expected ", expected_text);
}

}  // namespace

double parse_finite_attribute(const std::string& text, const std::filesystem::path& file,
                              const std::string& attribute) {
    double v = 0.0;
    const char* end = text.data() + text.size();
    const auto [ptr, ec] = std::from_chars(text.data(), end, v);
    SEGRANK_CHECK(ec == std::errc() && ptr == end && std::isfinite(v), file.string(),
                  ": attribute ", attribute, " = \"", text,
                  "\": expected a finite number (as segrank writes it, e.g. \"0.4545\")");
    return v;
}

ResumeState read_resume_state(const CheckpointReader& r, const std::filesystem::path& file,
                              const ResumeTarget& target) {
    const std::string f = file.string();
    ResumeState s;
    s.selection.best_step = r.attr_int("best_step").value_or(-1);
    SEGRANK_CHECK(s.selection.best_step >= -1 && s.selection.best_step <= target.step, f,
                  ": attribute /extra/best_step = ", s.selection.best_step,
                  ": expected -1 (no evaluation yet) or a step in [0, ", target.step,
                  "] (the checkpoint's /step)");
    if (const auto best = r.attr_string("best_selection")) {
        s.selection.best = parse_finite_attribute(*best, file, "/extra/best_selection");
        const SelectionRange range =
            selection_range(cfg::to_string(target.metric), parse_task(target.task));
        // -1e300: the writer's "no evaluation yet" (SelectionState's initial best).
        SEGRANK_CHECK(s.selection.best == SelectionState{}.best ||
                          (s.selection.best >= range.lo && s.selection.best <= range.hi),
                      f, ": attribute /extra/best_selection = ", *best, ": expected ", range.text,
                      " for eval.metric = \"", cfg::to_string(target.metric),
                      "\", or -1e300 (no evaluation yet)");
    }
    s.selection.evals_without_improvement = r.attr_int("evals_without_improvement").value_or(0);
    SEGRANK_CHECK(
        s.selection.evals_without_improvement >= 0, f,
        ": attribute /extra/evals_without_improvement = ", s.selection.evals_without_improvement,
        ": expected >= 0 (a count of evaluations)");
    const auto world = r.attr_int("world_size");
    SEGRANK_CHECK(world.has_value(), f,
                  ": no attribute /extra/world_size (every training checkpoint has one)");
    SEGRANK_CHECK(*world >= 1, f, ": attribute /extra/world_size = ", *world,
                  ": expected >= 1 (the number of ranks that trained the run)");
    const auto ranks = r.attr_int("history_ranks");
    SEGRANK_CHECK(ranks.has_value(), f,
                  ": no attribute /extra/history_ranks (every training checkpoint has one)");
    s.history_ranks = *ranks;
    SEGRANK_CHECK(s.history_ranks == *world, f,
                  ": attribute /extra/history_ranks = ", s.history_ranks, ": expected ", *world,
                  " (/extra/world_size: the checkpoint holds one history shard per rank)");
    if (const auto task = r.attr_string("task"))
        SEGRANK_CHECK(
            *task == target.task, f, ": attribute /extra/task = \"", *task, "\": expected \"",
            target.task,
            "\" (the task of the run's data: a checkpoint resumes the run that wrote it)");
    return s;
}

HistoryArrays read_history_shard(const CheckpointReader& r, const std::filesystem::path& file,
                                 int64_t shard, const ResumeTarget& target) {
    const ShardDataset dg = shard_dataset(r, file, shard, "graphs");
    const ShardDataset ds = shard_dataset(r, file, shard, "graph_segments");
    const ShardDataset dk = shard_dataset(r, file, shard, "keys");
    const ShardDataset dt = shard_dataset(r, file, shard, "steps");
    const ShardDataset dv = shard_dataset(r, file, shard, "values");
    // Shapes first, against each other: nothing is indexed before they agree.
    check_shape(dg, {-1}, "[G] (one id per graph)");
    const int64_t g = dg.shape[0];
    check_shape(ds, {g}, str("[", g, "] (one segment count per entry of graphs)"));
    check_shape(dt, {-1}, "[E] (one step per entry)");
    const int64_t e = dt.shape[0];
    check_shape(dk, {e, 3}, str("[", e, ", 3] (graph, config, segment of each entry of steps)"));
    check_shape(dv, {e, target.width},
                str("[", e, ", ", target.width,
                    "] (one value per entry of steps, of the width this run's model and "
                    "segments.aggregate store)"));

    HistoryArrays a;
    a.width = target.width;
    a.graphs = r.get_array<int64_t>(dg.name);
    a.graph_segments = r.get_array<int32_t>(ds.name);
    a.keys = r.get_array<int64_t>(dk.name);
    a.steps = r.get_array<int64_t>(dt.name);
    a.values = r.get_array<float>(dv.name);
    SEGRANK_ASSERT(static_cast<int64_t>(a.graphs.size()) == g &&
                       static_cast<int64_t>(a.graph_segments.size()) == g &&
                       static_cast<int64_t>(a.keys.size()) == 3 * e &&
                       static_cast<int64_t>(a.steps.size()) == e &&
                       static_cast<int64_t>(a.values.size()) == e * target.width,
                   "history shard sizes differ from their shapes");

    const auto num_graphs = static_cast<int64_t>(target.num_nodes.size());
    std::unordered_map<int64_t, int32_t> segments;  // graph id -> S
    for (int64_t i = 0; i < g; ++i) {
        const int64_t id = a.graphs[static_cast<size_t>(i)];
        SEGRANK_CHECK(id >= 0 && id < num_graphs, dg.where, "[", i, "] = ", id,
                      ": expected a training graph id in [0, ", num_graphs, ")");
        const int32_t s = a.graph_segments[static_cast<size_t>(i)];
        const int64_t nodes = std::max<int64_t>(1, target.num_nodes[static_cast<size_t>(id)]);
        SEGRANK_CHECK(s >= 1 && s <= nodes, ds.where, "[", i, "] = ", s,
                      ": expected a segment count in [1, ", nodes, "] (graph ", id, " has ", nodes,
                      " nodes)");
        SEGRANK_CHECK(segments.emplace(id, s).second, dg.where, "[", i, "] = ", id,
                      ": expected distinct graph ids (it appears twice)");
    }
    for (int64_t i = 0; i < e; ++i) {
        const auto k = static_cast<size_t>(3 * i);
        const int64_t graph = a.keys[k], config = a.keys[k + 1], seg = a.keys[k + 2];
        const auto it = segments.find(graph);
        SEGRANK_CHECK(it != segments.end(), dk.where, "[", i, ", 0] = ", graph,
                      ": expected a graph id listed in /extra/", dg.name);
        const int64_t configs = target.num_configs[static_cast<size_t>(graph)];
        SEGRANK_CHECK(config >= 0 && config < configs, dk.where, "[", i, ", 1] = ", config,
                      ": expected a config index of graph ", graph, " in [0, ", configs, ")");
        SEGRANK_CHECK(seg >= 0 && seg < it->second, dk.where, "[", i, ", 2] = ", seg,
                      ": expected a segment of graph ", graph, " in [0, ", it->second,
                      ") (its graph_segments)");
        const int64_t step = a.steps[static_cast<size_t>(i)];
        SEGRANK_CHECK(step >= 0 && step < target.step, dt.where, "[", i, "] = ", step,
                      ": expected a step in [0, ", target.step,
                      ") (values are written during a step before the checkpoint's /step = ",
                      target.step, ")");
    }
    for (size_t i = 0; i < a.values.size(); ++i)
        SEGRANK_CHECK(std::isfinite(a.values[i]), dv.where, "[",
                      i / static_cast<size_t>(target.width), ", ",
                      i % static_cast<size_t>(target.width), "] = ", a.values[i],
                      ": expected a finite value");
    return a;
}

}  // namespace segrank
