// CostModel and Graph (include/segrank/cost_model.h): checkpoints loaded with load_model, graphs
// opened as GraphSources, scores by the streaming inference of gst/ (score_graph) exactly as
// `segrank predict` computes them.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <numeric>
#include <utility>

#include "api/cost_model_internal.h"
#include "data/graph.h"
#include "data/graph_store.h"
#include "data/hlo/featurizer.h"
#include "data/hlo/proto_reader.h"
#include "data/memory_graph_source.h"
#include "data/npz.h"
#include "gnn/core/check.h"
#include "gst/gst.h"
#include "util/user_input.h"

namespace segrank {

namespace fs = std::filesystem;

std::recursive_mutex& cost_model_mutex() {
    static std::recursive_mutex m;
    return m;
}

const char* cost_task_name(CostTask task) { return task == CostTask::kTile ? "tile" : "layout"; }

namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

CostTask to_cost_task(Task t) { return t == Task::kTile ? CostTask::kTile : CostTask::kLayout; }

// A Graph owning `src`, graph `index` of it.
Graph owning_graph(std::unique_ptr<GraphSource> src, int64_t index) {
    auto impl = std::make_shared<Graph::Impl>();
    impl->entry.source = src.get();
    impl->entry.index = index;
    impl->entry.collection = src->collection();
    impl->entry.info = src->info(index);
    impl->entry.name = impl->entry.info.name;
    impl->where = src->where(index);
    impl->label = impl->where;
    impl->owned = std::move(src);
    return Graph(std::move(impl));
}

CollectionId loose_collection(Task task) {
    CollectionId id;
    id.task = task;
    id.source = Source::kXla;
    id.search = task == Task::kTile ? Search::kNone : Search::kDefault;
    id.split = Split::kUnknown;
    return id;
}

Graph from_module(const hlo::ModuleTuning& mt, const std::string& where, const fs::path& file) {
    const auto task = hlo::detect_task(mt);
    SEGRANK_CHECK(task.has_value(), where,
                  ": module has no config runs (expected op_config runs for tile or module_config "
                  "runs for layout)");
    if (*task == Task::kTile) {
        auto res = hlo::featurize_tile(mt, where);
        SEGRANK_CHECK(res.graph.has_value(), where, ": module skipped: ", res.skip_reason);
        res.graph->source = file;
        validate(*res.graph, LabelPolicy::kAllowTestZeros, where);
        return owning_graph(std::make_unique<MemoryGraphSource>(std::move(*res.graph),
                                                                loose_collection(*task), where),
                            0);
    }
    auto res = hlo::featurize_layout(mt, where);
    SEGRANK_CHECK(res.graph.has_value(), where, ": module skipped: ", res.skip_reason);
    res.graph->source = file;
    validate(*res.graph, LabelPolicy::kAllowTestZeros, where);
    return owning_graph(
        std::make_unique<MemoryGraphSource>(std::move(*res.graph), loose_collection(*task), where),
        0);
}

bool ends_with(const std::string& s, const std::string& tail) {
    return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

void minmax_normalize(std::vector<double>& v) {
    if (v.empty()) return;
    auto [lo, hi] = std::minmax_element(v.begin(), v.end());
    const double a = *lo, b = *hi;
    for (auto& x : v) x = b > a ? (x - a) / (b - a) : 0.0;
}

}  // namespace

InferenceBudget score_budget(const ScoreOptions& o, const RunConfig& cfg,
                             const std::string& checkpoint, const std::string& memory_key,
                             const std::string& cache_key) {
    const std::string own_memory = "eval.memory_mb of " + checkpoint;
    const std::string own_cache = "eval.cache_mb of " + checkpoint;
    if (o.memory_mb > 0) return inference_budget(o.memory_mb, o.cache_mb, memory_key, cache_key);
    if (o.cache_mb >= 0)
        return inference_budget(cfg.eval.memory_mb, o.cache_mb, own_memory, cache_key);
    return inference_budget(cfg.eval.memory_mb, cfg.eval.cache_mb, own_memory, own_cache);
}

namespace {

// Member m's raw scores of `configs` (empty = all) of g; the caller holds the lock.
std::vector<float> member_raw(const CostModel::Impl& cm, const CostMember& mem, Graph::Impl& g,
                              std::span<const int64_t> configs) {
    LoadedModel& lm = const_cast<LoadedModel&>(mem.lm);
    const ScoreOptions& o = cm.options;
    std::unique_ptr<PreparedGraph> local;
    PreparedGraph* pg = prepared_for(lm, g, local);
    std::vector<int64_t> all;
    if (configs.empty()) {
        all = pg->configs;
        configs = all;
    }
    for (size_t i = 0; i < configs.size(); ++i)
        SEGRANK_CHECK(configs[i] >= 0 && configs[i] < pg->num_configs, g.where, ": config index ",
                      configs[i], " (position ", i, ") is out of range (the graph has ",
                      pg->num_configs, " configs)");
    GstOptions opt = gst_options_from(lm.cfg);
    if (o.tta_orders > 0) opt.tta_orders = o.tta_orders;
    if (o.dense) opt.dedupe_rows = false;
    const int64_t chunk = o.chunk_configs > 0 ? o.chunk_configs : lm.cfg.eval.chunk_configs;
    const int64_t dchunk = o.chunk_configs > 0 ? o.chunk_configs : lm.cfg.eval.dedupe_chunk_configs;
    const InferenceBudget budget = score_budget(o, lm.cfg, mem.name);
    const InferenceChunk ch = inference_chunk(*lm.model, opt, chunk, dchunk, budget);
    std::vector<float> s = score_graph(*lm.model, *pg, configs, ch, opt, budget.cache_bytes);
    // A model that produces NaN or infinite scores (a diverged or edited checkpoint) must not turn
    // into a ranking in default order.
    for (size_t i = 0; i < s.size(); ++i)
        SEGRANK_CHECK(std::isfinite(s[i]), mem.name, ": score of config ", configs[i],
                      " of graph '", g.label, "' is ", s[i],
                      " (the model's parameters are not finite or overflow); nothing written");
    if (!g.keep_prepared) g.prepared.clear();
    return s;
}

}  // namespace

// g prepared for member lm: from g's cache, else prepared now (kept in g when it keeps them,
// else in `local`).
PreparedGraph* prepared_for(LoadedModel& lm, Graph::Impl& g,
                            std::unique_ptr<PreparedGraph>& local) {
    if (auto it = g.prepared.find(lm.model.get()); it != g.prepared.end()) return it->second.get();
    PrepareOptions prep = prepare_options_from(lm.cfg);
    prep.require_labels = false;
    local = prepare_graph(g.entry, lm.normalizer, *lm.model, prep);
    PreparedGraph* pg = local.get();
    if (g.keep_prepared) g.prepared[lm.model.get()] = std::move(local);
    return pg;
}

void require_member(const CostModel::Impl& cm, const Graph::Impl& g) {
    for (const auto& m : cm.members)
        if (m.lm.task == g.entry.collection.task) return;
    SEGRANK_CHECK(false, g.where, ": no loaded checkpoint was trained on the ",
                  to_string(g.entry.collection.task), " task (give a checkpoint of that task)");
}

// ---- Graph ----

Graph::Graph(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}
Graph::~Graph() = default;
Graph::Graph(const Graph&) = default;
Graph& Graph::operator=(const Graph&) = default;
Graph::Graph(Graph&&) noexcept = default;
Graph& Graph::operator=(Graph&&) noexcept = default;

Graph Graph::open(const std::string& spec) {
    SEGRANK_CHECK(!spec.empty(),
                  "graph: expected FILE.npz, STORE.h5:NAME or FILE.pb[:MODULE], got ''");
    if (const auto h5 = spec.find(".h5:"); h5 != std::string::npos) {
        std::string name = spec.substr(h5 + 4);
        if (name.rfind("/graphs/", 0) == 0) name = name.substr(8);
        return from_store(spec.substr(0, h5 + 3), name);
    }
    if (const auto pb = spec.find(".pb:"); pb != std::string::npos)
        return from_tuning_pb(spec.substr(0, pb + 3), spec.substr(pb + 4));
    if (ends_with(spec, ".pb")) return from_tuning_pb(spec);
    if (ends_with(spec, ".npz")) return from_npz(spec);
    SEGRANK_CHECK(!ends_with(spec, ".h5"), spec,
                  ": an HDF5 store holds many graphs: name one as STORE.h5:NAME");
    SEGRANK_CHECK(false, spec, ": expected a .npz file, STORE.h5:NAME or a tuning .pb file");
    return from_npz(spec);  // unreachable
}

Graph Graph::from_npz(const std::string& path) {
    Lock lock(cost_model_mutex());
    require_regular_input(path, "an npz file");  // a FIFO, folder or device named as such
    bool tile = false;
    {
        NpzReader r(path);
        tile = r.contains("config_feat");
        SEGRANK_CHECK(tile || r.contains("node_config_feat"), path,
                      ": neither config_feat (tile) nor node_config_feat (layout) is present");
    }
    if (tile)
        return owning_graph(
            std::make_unique<MemoryGraphSource>(load_tile_npz(path, LabelPolicy::kAllowTestZeros),
                                                loose_collection(Task::kTile), path),
            0);
    return owning_graph(
        std::make_unique<MemoryGraphSource>(load_layout_npz(path, LabelPolicy::kAllowTestZeros),
                                            loose_collection(Task::kLayout), path),
        0);
}

Graph Graph::from_store(const std::string& store_path, const std::string& name) {
    Lock lock(cost_model_mutex());
    SEGRANK_CHECK(fs::is_regular_file(store_path), store_path, ": no such HDF5 store");
    SEGRANK_CHECK(!name.empty(), store_path, ": expected a graph name after ':'");
    auto store = std::make_unique<GraphStore>(store_path, LabelPolicy::kAllowTestZeros);
    for (int64_t i = 0; i < store->size(); ++i)
        if (store->info(i).name == name) return owning_graph(std::move(store), i);
    SEGRANK_CHECK(false, store_path, ": no graph '", name, "' among its ", store->size(),
                  " graphs (/graphs/<name>)");
    return Graph(nullptr);
}

namespace {
// The names of a tuning file's modules, comma-separated, at most 40 (then ", ... N more").
std::string module_names(const hlo::TuningFile& file) {
    std::string out;
    const size_t n = file.modules.size(), shown = std::min<size_t>(n, 40);
    for (size_t i = 0; i < shown; ++i) out += (i ? ", " : "") + file.modules[i].module.name;
    if (n > shown) out += str(", ... ", n - shown, " more");
    return out;
}
}  // namespace

Graph Graph::from_tuning_pb(const std::string& path, const std::string& module) {
    Lock lock(cost_model_mutex());
    const hlo::TuningFile file = hlo::read_tuning_file(path);
    SEGRANK_CHECK(!file.modules.empty(), path, ": the tuning file holds no module");
    if (module.empty()) {
        SEGRANK_CHECK(file.modules.size() == 1, path, ": the file holds ", file.modules.size(),
                      " modules: name one as ", path, ":MODULE (e.g. ", path, ":",
                      file.modules[0].module.name, "; the modules: ", module_names(file), ")");
        return from_module(file.modules[0], path, path);
    }
    for (size_t i = 0; i < file.modules.size(); ++i)
        if (file.modules[i].module.name == module)
            return from_module(file.modules[i], str(path, ": module '", module, "'"), path);
    SEGRANK_CHECK(false, path, ": no module named '", module, "' among its ", file.modules.size(),
                  " modules (", module_names(file), ")");
    return Graph(nullptr);
}

Graph Graph::from_module_tuning(std::string_view serialized, const std::string& name) {
    Lock lock(cost_model_mutex());
    hlo::ModuleTuning mt = hlo::parse_module_tuning_bytes(serialized, name);
    hlo::check_module_tuning(mt, name);
    return from_module(mt, name, name);
}

Graph Graph::from_arrays(GraphArrays a) {
    Lock lock(cost_model_mutex());
    const std::string where = a.name.empty() ? std::string("graph arrays") : a.name;
    const auto n = static_cast<int64_t>(a.node_opcode.size());
    SEGRANK_CHECK(static_cast<int64_t>(a.node_feat.size()) == n * kNodeFeatDim, where,
                  ": node_feat has ", a.node_feat.size(), " values, expected [n = ", n, ", ",
                  kNodeFeatDim, "] = ", n * kNodeFeatDim);
    SEGRANK_CHECK(a.edge_index.size() % 2 == 0, where, ": edge_index has ", a.edge_index.size(),
                  " values, expected [m, 2]");
    auto fill = [&](GraphStructure& g) {
        g.name = a.name.empty() ? "graph" : a.name;
        g.source = where;
        g.node_feat = Tensor(n, kNodeFeatDim);
        std::copy(a.node_feat.begin(), a.node_feat.end(), g.node_feat.data());
        g.node_opcode = std::move(a.node_opcode);
        g.edge_index = std::move(a.edge_index);
    };
    if (a.task == CostTask::kTile) {
        SEGRANK_CHECK(a.config_feat.size() % kTileConfigDim == 0, where, ": config_feat has ",
                      a.config_feat.size(), " values, expected [c, ", kTileConfigDim, "]");
        const auto c = static_cast<int64_t>(a.config_feat.size() / kTileConfigDim);
        TileGraph g;
        fill(g);
        g.config_feat = Tensor(c, kTileConfigDim);
        std::copy(a.config_feat.begin(), a.config_feat.end(), g.config_feat.data());
        g.config_runtime = a.config_runtime.empty() ? std::vector<int64_t>(c, 0) : a.config_runtime;
        g.config_runtime_normalizers.assign(static_cast<size_t>(c), 1);
        validate(g, LabelPolicy::kAllowTestZeros, where);
        return owning_graph(
            std::make_unique<MemoryGraphSource>(std::move(g), loose_collection(Task::kTile), where),
            0);
    }
    const auto nc = static_cast<int64_t>(a.node_config_ids.size());
    SEGRANK_CHECK(nc > 0 && a.node_config_feat.size() % (nc * kLayoutConfigDim) == 0, where,
                  ": node_config_feat has ", a.node_config_feat.size(),
                  " values, expected [c, nc = ", nc, ", ", kLayoutConfigDim, "] (nc > 0)");
    const auto c = static_cast<int64_t>(a.node_config_feat.size()) / (nc * kLayoutConfigDim);
    LayoutGraph g;
    fill(g);
    g.node_config_ids = std::move(a.node_config_ids);
    g.node_config_feat = std::move(a.node_config_feat);
    g.node_splits = a.node_splits.empty() ? std::vector<int64_t>{0, n} : a.node_splits;
    g.config_runtime = a.config_runtime.empty() ? std::vector<int64_t>(c, 0) : a.config_runtime;
    validate(g, LabelPolicy::kAllowTestZeros, where);
    return owning_graph(
        std::make_unique<MemoryGraphSource>(std::move(g), loose_collection(Task::kLayout), where),
        0);
}

const std::string& Graph::name() const { return impl_->entry.name; }
const std::string& Graph::where() const { return impl_->where; }
CostTask Graph::task() const { return to_cost_task(impl_->entry.collection.task); }
int64_t Graph::num_nodes() const { return impl_->entry.info.num_nodes; }
int64_t Graph::num_configs() const { return impl_->entry.info.num_configs; }
int64_t Graph::num_config_nodes() const { return impl_->entry.info.num_config_nodes; }

std::vector<int64_t> Graph::runtimes_ns() const {
    Lock lock(cost_model_mutex());
    return impl_->entry.source->load_labels(impl_->entry.index).runtime;
}

std::vector<float> Graph::config_row(int64_t c) const {
    Lock lock(cost_model_mutex());
    SEGRANK_CHECK(c >= 0 && c < num_configs(), impl_->where, ": config index ", c,
                  " is out of range (the graph has ", num_configs(), " configs)");
    ConfigTensors t = impl_->entry.source->load_configs(impl_->entry.index, ConfigRows::only({c}));
    if (task() == CostTask::kTile) return {t.tile_feat.span().begin(), t.tile_feat.span().end()};
    return {t.layout_feat.begin(), t.layout_feat.end()};
}

std::vector<int64_t> Graph::config_node_ids() const {
    Lock lock(cost_model_mutex());
    if (task() == CostTask::kTile) return {};
    return impl_->entry.source->load_structure_index(impl_->entry.index).node_config_ids;
}

Graph graph_from_record(TileGraph g, const std::string& where) {
    Lock lock(cost_model_mutex());
    validate(g, LabelPolicy::kAllowTestZeros, where);
    return owning_graph(
        std::make_unique<MemoryGraphSource>(std::move(g), loose_collection(Task::kTile), where), 0);
}

Graph graph_from_record(LayoutGraph g, const std::string& where) {
    Lock lock(cost_model_mutex());
    validate(g, LabelPolicy::kAllowTestZeros, where);
    return owning_graph(
        std::make_unique<MemoryGraphSource>(std::move(g), loose_collection(Task::kLayout), where),
        0);
}

Graph graph_from_entry(const GraphEntry& entry, std::string label) {
    auto impl = std::make_shared<Graph::Impl>();
    impl->entry = entry;
    impl->where = entry.source->where(entry.index);
    impl->label = std::move(label);
    impl->keep_prepared = false;
    return Graph(std::move(impl));
}

// ---- CostModel ----

CostModel::CostModel(const std::vector<std::string>& checkpoints, ScoreOptions options)
    : impl_(std::make_unique<Impl>()) {
    Lock lock(cost_model_mutex());
    SEGRANK_CHECK(!checkpoints.empty(), "CostModel: expected at least one checkpoint");
    SEGRANK_CHECK(options.chunk_configs >= 0, "ScoreOptions.chunk_configs: expected >= 0, got ",
                  options.chunk_configs);
    SEGRANK_CHECK(options.cache_mb <= (int64_t{1} << 20),
                  "ScoreOptions.cache_mb: expected <= 1048576, got ", options.cache_mb);
    SEGRANK_CHECK(options.memory_mb == 0 || (options.memory_mb >= kMinInferenceMemoryMb &&
                                             options.memory_mb <= kMaxInferenceMemoryMb),
                  "ScoreOptions.memory_mb: expected 0 (the checkpoint's eval.memory_mb) or ",
                  kMinInferenceMemoryMb, " to ", kMaxInferenceMemoryMb, ", got ",
                  options.memory_mb);
    SEGRANK_CHECK(options.tta_orders >= 0 && options.tta_orders <= 1024,
                  "ScoreOptions.tta_orders: expected 0..1024, got ", options.tta_orders);
    impl_->options = options;
    for (const auto& c : checkpoints) {
        impl_->members.push_back({load_model(c), c});
        (void)score_budget(options, impl_->members.back().lm.cfg, c);  // fits, or names the keys
    }
}
CostModel::~CostModel() = default;
CostModel::CostModel(CostModel&&) noexcept = default;
CostModel& CostModel::operator=(CostModel&&) noexcept = default;

size_t CostModel::num_members() const { return impl_->members.size(); }
const std::string& CostModel::checkpoint(size_t m) const { return impl_->members.at(m).name; }
CostTask CostModel::task(size_t m) const { return to_cost_task(impl_->members.at(m).lm.task); }
bool CostModel::covers(CostTask task) const {
    for (size_t m = 0; m < num_members(); ++m)
        if (this->task(m) == task) return true;
    return false;
}

std::vector<std::vector<float>> CostModel::member_scores(const Graph& g,
                                                         std::span<const int64_t> configs) const {
    Lock lock(cost_model_mutex());
    Graph::Impl& gi = *g.impl();
    require_member(*impl_, gi);
    std::vector<std::vector<float>> out;
    for (const auto& m : impl_->members)
        if (m.lm.task == gi.entry.collection.task)
            out.push_back(member_raw(*impl_, m, gi, configs));
    return out;
}

std::vector<double> CostModel::score(const Graph& g, std::span<const int64_t> configs) const {
    Lock lock(cost_model_mutex());
    Graph::Impl& gi = *g.impl();
    require_member(*impl_, gi);
    std::vector<double> ensemble;
    int used = 0;
    for (const auto& m : impl_->members) {
        if (m.lm.task != gi.entry.collection.task) continue;
        const std::vector<float> s = member_raw(*impl_, m, gi, configs);
        std::vector<double> d(s.begin(), s.end());
        if (impl_->members.size() > 1) minmax_normalize(d);
        if (ensemble.empty()) ensemble.assign(d.size(), 0.0);
        for (size_t i = 0; i < d.size(); ++i) ensemble[i] += d[i];
        ++used;
    }
    for (auto& x : ensemble) x /= used;
    return ensemble;
}

std::vector<int64_t> CostModel::ranking(std::span<const double> scores) {
    std::vector<int64_t> order(scores.size());
    std::iota(order.begin(), order.end(), int64_t{0});
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t a, int64_t b) { return scores[a] < scores[b]; });
    return order;
}

}  // namespace segrank
