// segrank's cost model as a library for compilers and autotuners (docs/tune.md#library-api).
//
// Load one or more trained checkpoints, open a graph (a TpuGraphs npz, a graph of an HDF5 store,
// an XLA tuning .pb, serialized ModuleTuningData bytes, or arrays held in memory) and score a batch
// of its configurations: a lower score means a faster configuration. Several checkpoints of one
// task form an ensemble exactly as `segrank predict` does: each member's scores of a graph are
// min-max normalized over the configs scored, then averaged.
//
//     segrank::CostModel model({"runs/tile_sage"});
//     segrank::Graph g = segrank::Graph::open("kernels/fusion.123.npz");
//     std::vector<double> s = model.score(g);            // every config of g
//     int64_t best = segrank::CostModel::ranking(s)[0];  // the predicted fastest config
//
// Thread safety: every method of CostModel and Graph may be called from several threads at once
// (const methods on one shared object included). The work itself is serialized on one
// process-wide lock, because the HDF5 library build is not thread-safe and one scoring pass already
// uses every OpenMP thread (set OMP_NUM_THREADS to limit them). refit() is the only non-const
// scoring-state change; it takes the same lock.
//
// No MPI initialization is needed: the library never calls MPI. Errors are thrown as
// std::runtime_error (segrank::Error derives from it) with a message naming the file, the field and
// what was expected.
//
// This header includes only standard headers; link with `find_package(segrank)` and
// `target_link_libraries(app PRIVATE segrank::segrank)`.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace segrank {

/// The two TpuGraphs tasks: tile-size configs of one kernel, or layout configs of a whole module.
enum class CostTask { kTile, kLayout };

/// "tile" or "layout".
const char* cost_task_name(CostTask task);

/// A graph held in memory as the TpuGraphs npz arrays (docs/files.md#keys-and-dtypes), for a caller
/// that featurized the program itself. Runtimes are optional (left empty: unknown, zeros).
struct GraphArrays {
    CostTask task = CostTask::kTile;
    std::string name;                      ///< names the graph in messages
    std::vector<float> node_feat;          ///< [n, 140] raw node features, row-major
    std::vector<int32_t> node_opcode;      ///< [n] opcode ids 0..120
    std::vector<int64_t> edge_index;       ///< [m, 2] row-major (u, v): u consumes v
    std::vector<float> config_feat;        ///< tile: [c, 24]
    std::vector<int64_t> node_config_ids;  ///< layout: [nc] strictly increasing node indices
    std::vector<int8_t> node_config_feat;  ///< layout: [c, nc, 18] values -1..5
    std::vector<int64_t> node_splits;      ///< layout: computation boundaries (empty = {0, n})
    std::vector<int64_t> config_runtime;   ///< [c] ns, or empty
};

/// One graph whose configurations are scored. Cheap to copy (copies share the graph and the
/// per-checkpoint preparation cache).
class Graph {
public:
    /// Opens `spec`: a `.npz` file, `store.h5:NAME` (or `store.h5:/graphs/NAME`: graph NAME of an
    /// HDF5 store), or an XLA tuning file `file.pb` (`file.pb:MODULE` picks a module of a
    /// TuningData file holding several). Throws naming the file when it cannot be read, the graph
    /// is missing or invalid, or a .pb module is skipped by the featurizer (and why).
    static Graph open(const std::string& spec);
    /// A TpuGraphs npz file (tile when it has config_feat, layout when node_config_feat).
    static Graph from_npz(const std::string& path);
    /// Graph `name` of an HDF5 store written by `segrank pack` or `synth`.
    static Graph from_store(const std::string& store_path, const std::string& name);
    /// An XLA tuning file (TuningData or ModuleTuningData), featurized as `segrank ingest` does;
    /// `module` is required when the file holds several modules.
    static Graph from_tuning_pb(const std::string& path, const std::string& module = "");
    /// One serialized tpu_graphs ModuleTuningData (an HLO module and its config runs held in
    /// memory), featurized as `segrank ingest` does; `name` names it in messages.
    static Graph from_module_tuning(std::string_view serialized, const std::string& name);
    /// Arrays held in memory; validated as an npz would be (throws naming the array and index).
    static Graph from_arrays(GraphArrays arrays);

    ~Graph();
    Graph(const Graph&);
    Graph& operator=(const Graph&);
    Graph(Graph&&) noexcept;
    Graph& operator=(Graph&&) noexcept;

    const std::string& name() const;   ///< file stem, module or store name
    const std::string& where() const;  ///< what it was read from, for messages
    CostTask task() const;
    int64_t num_nodes() const;
    int64_t num_configs() const;       ///< c
    int64_t num_config_nodes() const;  ///< layout nc; 0 for tile
    /// The recorded config_runtime of every config (ns; zeros when unknown, e.g. a test split).
    std::vector<int64_t> runtimes_ns() const;
    /// Config `c` as its feature row: tile [24] config_feat values, layout [nc * 18] (as floats).
    /// Throws for c out of range.
    std::vector<float> config_row(int64_t c) const;
    /// Node index (in node order) of each configurable layout node, [nc]; empty for tile.
    std::vector<int64_t> config_node_ids() const;

    struct Impl;
    explicit Graph(std::shared_ptr<Impl> impl);
    const std::shared_ptr<Impl>& impl() const { return impl_; }

private:
    std::shared_ptr<Impl> impl_;
};

/// Inference settings (each 0 or negative: the checkpoint's own `eval.*` value).
struct ScoreOptions {
    int64_t chunk_configs = 0;  ///< configs per forward pass (eval.chunk_configs)
    /// MiB of config-independent rows kept per graph (eval.cache_mb), at most half the budget.
    int64_t cache_mb = -1;
    int32_t tta_orders = 0;  ///< config orders averaged with config attention (eval.tta_orders)
    bool dense = false;      ///< compute every (node, config) row (eval.dedupe_rows = false)
    /// MiB scoring may hold per graph beside the graph's own arrays (eval.memory_mb, 16 to
    /// 1048576): the cache, the chunk state and the chunk's config rows are derived from it
    /// (docs/gst.md#memory-budget). Set without cache_mb, the cache is a quarter of it (the
    /// checkpoint's eval.cache_mb is not used). Last, so positional initializers of the fields
    /// above keep their meaning.
    int64_t memory_mb = 0;
};

/// One or more trained checkpoints used as a cost model.
class CostModel {
public:
    /// Loads each path: a run directory (its best.ckpt.h5, else last.ckpt.h5) or a .ckpt.h5 file.
    /// Throws naming the path when it is missing or not a segrank checkpoint, or when `checkpoints`
    /// is empty.
    explicit CostModel(const std::vector<std::string>& checkpoints, ScoreOptions options = {});
    ~CostModel();
    CostModel(CostModel&&) noexcept;
    CostModel& operator=(CostModel&&) noexcept;

    size_t num_members() const;
    const std::string& checkpoint(size_t member) const;  ///< the path as given
    CostTask task(size_t member) const;
    /// True when some member was trained on `task`.
    bool covers(CostTask task) const;

    /// Scores (lower = predicted faster) of `configs` of g (empty = every config, in index order),
    /// [configs.size()]. One member: its raw scores. Several: the members of g's task, each min-max
    /// normalized over these configs, averaged (normalized only when num_members() > 1, as
    /// `segrank predict`). Throws when no member has g's task, a config index is out of range, or a
    /// score is not finite (naming the checkpoint, the graph and the config).
    std::vector<double> score(const Graph& g, std::span<const int64_t> configs = {}) const;
    /// Each member of g's task's raw scores of `configs`, [members of the task][configs.size()]
    /// (ensemble disagreement for exploration). Same errors as score().
    std::vector<std::vector<float>> member_scores(const Graph& g,
                                                  std::span<const int64_t> configs = {}) const;
    /// Indices into `scores` sorted by ascending score, ties by index (the predicted order).
    static std::vector<int64_t> ranking(std::span<const double> scores);

    /// Which parameters refit() trains.
    enum class RefitScope { kHead, kAll };
    /// Fine-tunes every member of g's task on measured runtimes of configs of g: `steps` AdamW
    /// steps (learning rate `lr`) of the pairwise hinge ranking loss over every pair of measured
    /// configs with different runtimes, on the head parameters only or on all parameters. Needs at
    /// least two distinct runtimes (else does nothing and returns 0). Returns the mean loss of the
    /// last step. Changes the loaded model in memory only (checkpoint files are not written).
    /// `stop`, when given, is asked before every step: true ends the refit there (the steps taken
    /// so far stay; e.g. a tuner's SIGTERM during a long full refit).
    double refit(const Graph& g, std::span<const int64_t> configs,
                 std::span<const double> runtimes_ns, RefitScope scope, int steps = 200,
                 double lr = 1e-3, const std::function<bool()>& stop = {});

    struct Impl;
    Impl& impl() const { return *impl_; }

private:
    std::unique_ptr<Impl> impl_;
};

}  // namespace segrank
