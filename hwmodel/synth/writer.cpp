// Streaming writer of synthetic collections with staged, all-or-nothing output.
#include "hwmodel/synth/writer.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <memory>
#include <new>
#include <optional>
#include <system_error>
#include <type_traits>

#include "data/graph.h"
#include "data/graph_store.h"
#include "gnn/core/check.h"
#include "util/atomic_file.h"
#include "util/dir_lock.h"
#include "util/signal_cleanup.h"

namespace segrank::synth {
namespace fs = std::filesystem;

std::vector<Split> assign_splits(int64_t graphs, const std::array<double, 3>& f, uint64_t seed,
                                 Task task) {
    SEGRANK_CHECK(graphs >= 1, "synth: --graphs must be >= 1, got ", graphs);
    for (double x : f)
        SEGRANK_CHECK(x >= 0 && x <= 1, "synth: split fraction ", x, " is not in [0, 1]");
    SEGRANK_CHECK(std::abs(f[0] + f[1] + f[2] - 1.0) < 1e-6, "synth: split fractions ", f[0], ",",
                  f[1], ",", f[2], " do not sum to 1");
    auto count = [&](double frac) {
        auto n = static_cast<int64_t>(std::llround(frac * static_cast<double>(graphs)));
        if (frac > 0 && graphs >= 3) n = std::max<int64_t>(n, 1);
        return n;
    };
    const int64_t valid = count(f[1]);
    const int64_t test = std::min(count(f[2]), graphs - valid);
    std::vector<Split> by_rank(static_cast<size_t>(graphs), Split::kTrain);
    for (int64_t i = 0; i < valid; ++i) by_rank[static_cast<size_t>(i)] = Split::kValid;
    for (int64_t i = valid; i < valid + test; ++i) by_rank[static_cast<size_t>(i)] = Split::kTest;
    // Graph i takes the split of its rank in a seeded permutation.
    std::vector<int64_t> perm(static_cast<size_t>(graphs));
    for (int64_t i = 0; i < graphs; ++i) perm[static_cast<size_t>(i)] = i;
    Rng rng = Rng::derive(seed, task == Task::kTile ? 0 : 1, 0, "synth-splits");
    for (int64_t i = graphs - 1; i > 0; --i)
        std::swap(perm[static_cast<size_t>(i)],
                  perm[rng.uniform_int(static_cast<uint64_t>(i + 1))]);
    std::vector<Split> out(static_cast<size_t>(graphs));
    for (int64_t r = 0; r < graphs; ++r)
        out[static_cast<size_t>(perm[static_cast<size_t>(r)])] = by_rank[static_cast<size_t>(r)];
    return out;
}

fs::path target_path(const fs::path& out, const CollectionId& id, StoreFormat format) {
    if (format == StoreFormat::kHdf5) return out / "h5" / (id.file_stem() + ".h5");
    if (id.task == Task::kTile) return out / "npz" / "tile" / "xla" / to_string(id.split);
    return out / "npz" / "layout" / "xla" / to_string(id.search) / to_string(id.split);
}

namespace {

CollectionId collection_of(Task task, Split split) {
    CollectionId id;
    id.task = task;
    id.source = Source::kXla;
    id.search = task == Task::kTile ? Search::kNone : Search::kRandom;
    id.split = split;
    return id;
}

// Removes the staging folder unless released (no partial output on error).
struct Staging {
    fs::path dir;
    bool keep = false;
    ~Staging() {
        std::error_code ec;
        if (!keep) fs::remove_all(dir, ec);
    }
};

void hide_labels(TileGraph& g) {
    std::fill(g.config_runtime.begin(), g.config_runtime.end(), 0);
    std::fill(g.config_runtime_normalizers.begin(), g.config_runtime_normalizers.end(), 1);
}
void hide_labels(LayoutGraph& g) { std::fill(g.config_runtime.begin(), g.config_runtime.end(), 0); }

}  // namespace

void remove_stale_staging(const fs::path& out) {
    std::error_code ec;
    if (!fs::is_directory(out, ec)) return;
    const std::string prefix = ".synth-staging-";
    for (const auto& e : fs::directory_iterator(out, ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind(prefix, 0) != 0 || !e.is_directory(ec)) continue;
        const std::string digits = name.substr(prefix.size());
        if (digits.empty() || digits.size() > 9 ||
            !std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; }))
            continue;
        const auto pid = static_cast<pid_t>(std::stol(digits));
        // Only folders whose process no longer exists (another synth may be writing into out).
        if (pid != ::getpid() && ::kill(pid, 0) != 0 && errno == ESRCH)
            fs::remove_all(e.path(), ec);
    }
}

namespace {

// The graphs (indices) of one collection split to write.
struct SplitPlan {
    CollectionId id;
    std::vector<int64_t> graphs;
};

// Every (task, split) target with at least one graph, in task then train/valid/test order;
// refuses an existing target (without opt.force) before any work.
std::vector<SplitPlan> plan_splits(const WriteOptions& opt) {
    std::vector<SplitPlan> plans;
    for (Task task : opt.tasks) {
        const auto splits = assign_splits(opt.graphs, opt.splits, opt.synth.seed, task);
        for (Split s : {Split::kTrain, Split::kValid, Split::kTest}) {
            SplitPlan p{collection_of(task, s), {}};
            for (int64_t i = 0; i < opt.graphs; ++i)
                if (splits[static_cast<size_t>(i)] == s) p.graphs.push_back(i);
            if (p.graphs.empty()) continue;
            const fs::path target = target_path(opt.out, p.id, opt.format);
            SEGRANK_CHECK(opt.force || !fs::exists(target), "synth: '", target.string(),
                          "' already exists (use --force to replace it)");
            plans.push_back(std::move(p));
        }
    }
    return plans;
}

// Staged layout graph i into `store`: written part by part, never held whole. Adds its nodes and
// configs to `w`.
void write_staged_layout(const WriteOptions& opt, const SplitPlan& p, int64_t i, bool hide,
                         GraphStoreWriter& store, WrittenSplit& w,
                         const std::function<void(const std::string&)>& progress) {
    bool begun = false;
    LayoutGraph g = synth_layout_parts(opt.synth, i, [&](GraphStructure& part) {
        if (!begun) store.begin_layout_parts(part.name, part.source);
        begun = true;
        store.append_layout_part(part);
    });
    if (hide) hide_labels(g);
    store.end_layout_parts(g);
    const int64_t n = g.node_splits.back();
    w.nodes += n;
    w.configs += g.num_configs();
    if (progress)
        progress(str(p.id.full_name(), " ", g.name, ": ", n, " nodes in ",
                     layout_stages(opt.synth, i), " stages, ", g.num_configs(), " configs"));
}

// "out of memory while generating graph 'synth_layout_000001' (layout:xla:random train, graph 2 of
// --graphs 3) ...", naming the options its memory grows with (docs/config.md#out-of-memory).
std::string synth_oom_message(const WriteOptions& opt, const SplitPlan& p, int64_t i) {
    char name[64];
    std::snprintf(name, sizeof(name), "synth_%s_%06lld",
                  p.id.task == Task::kTile ? "tile" : "layout", static_cast<long long>(i));
    const SynthOptions& o = opt.synth;
    const std::string configs =
        o.max_configs > o.configs ? str(o.configs, ":", o.max_configs) : str(o.configs);
    return str("out of memory while generating graph '", name, "' (", p.id.full_name(), ", graph ",
               i + 1, " of --graphs ", opt.graphs,
               "): an allocation failed; its memory grows with --nodes ", o.min_nodes, ":",
               o.max_nodes, " and --configs ", configs,
               " (one graph is held at a time); lower them or give the process more memory");
}

// Synthesizes and writes the graphs of `p` into `staged` (an npz folder, or a store when
// opt.format is hdf5); the final path is `final_path`.
WrittenSplit write_split(const WriteOptions& opt, const SplitPlan& p, const fs::path& staged,
                         const fs::path& final_path,
                         const std::function<void(const std::string&)>& progress) {
    WrittenSplit w{p.id, final_path, 0, 0, 0};
    std::unique_ptr<GraphStoreWriter> store;
    if (opt.format == StoreFormat::kHdf5) {
        fs::create_directories(staged.parent_path());
        store = std::make_unique<GraphStoreWriter>(staged, p.id, opt.out);
    } else {
        fs::create_directories(staged);
    }
    const bool hide = opt.hide_test_labels && p.id.split == Split::kTest;
    for (int64_t i : p.graphs) {
        auto write_one = [&](auto& g, const std::string& note) {
            if (hide) hide_labels(g);
            w.nodes += g.num_nodes();
            w.configs += g.num_configs();
            if (store) {
                store->add(g);
            } else if constexpr (std::is_same_v<std::decay_t<decltype(g)>, TileGraph>) {
                save_tile_npz(g, staged / (g.name + ".npz"), opt.npz_compression);
            } else {
                save_layout_npz(g, staged / (g.name + ".npz"), opt.npz_compression);
            }
            if (progress)
                progress(str(p.id.full_name(), " ", g.name, ": ", g.num_nodes(), " nodes", note,
                             ", ", g.num_configs(), " configs"));
        };
        try {
            if (p.id.task == Task::kTile) {
                SynthTile s = synth_tile(opt.synth, i);
                write_one(s.graph, "");
            } else if (store && layout_stages(opt.synth, i) > 1) {
                write_staged_layout(opt, p, i, hide, *store, w, progress);
            } else {
                SynthLayout s = synth_layout(opt.synth, i);
                const int64_t stages = layout_stages(opt.synth, i);
                write_one(s.graph, stages > 1 ? str(" in ", stages, " stages") : std::string());
            }
        } catch (const std::bad_alloc&) {
            throw Error(synth_oom_message(opt, p, i));
        }
        ++w.graphs;
    }
    if (store) store->finish();
    return w;
}

}  // namespace

std::vector<WrittenSplit> write_synthetic(const WriteOptions& opt,
                                          const std::function<void(const std::string&)>& progress) {
    opt.synth.validate();
    SEGRANK_CHECK(!opt.tasks.empty(), "synth: no collection selected (--collections tile,layout)");
    SEGRANK_CHECK(!opt.out.empty(), "synth: missing output directory (--out)");
    SEGRANK_CHECK(!fs::exists(opt.out) || fs::is_directory(opt.out), "synth: --out '",
                  opt.out.string(), "' exists and is not a directory");
    // Plan every (task, split) target and refuse to overwrite before doing any work.
    const std::vector<SplitPlan> plans = plan_splits(opt);

    const bool out_existed = fs::exists(opt.out);
    CreatedDirectories out_dir(opt.out);  // removed again if empty when anything below fails
    // One writer per --out (synth, pack, ingest): a loser keeps the folder the holder writes into.
    std::optional<OutputDirLock> lock;
    try {
        lock.emplace(opt.out, "synth");
    } catch (...) {
        out_dir.keep();
        throw;
    }
    // Re-checked under the lock: another synth may have finished writing them meanwhile.
    for (const SplitPlan& p : plans) {
        const fs::path target = target_path(opt.out, p.id, opt.format);
        SEGRANK_CHECK(opt.force || !fs::exists(target), "synth: '", target.string(),
                      "' already exists (use --force to replace it)");
    }
    remove_stale_staging(opt.out);
    Staging staging{opt.out / str(".synth-staging-", ::getpid())};
    fs::remove_all(staging.dir);
    // Killed by SIGTERM / SIGINT / SIGHUP: no partial output either (errors take Staging's path).
    // (the outermost folder the command created, so no empty parent stays either).
    RemoveOnTermination on_signal(out_existed                 ? staging.dir
                                  : out_dir.created().empty() ? opt.out
                                                              : out_dir.created().front());
    std::vector<WrittenSplit> written;
    for (const SplitPlan& p : plans)
        written.push_back(write_split(opt, p,
                                      staging.dir / target_path(fs::path(), p.id, opt.format),
                                      target_path(opt.out, p.id, opt.format), progress));

    // Everything succeeded: move the staged targets into place.
    for (const WrittenSplit& w : written) {
        const fs::path staged = staging.dir / target_path(fs::path(), w.id, opt.format);
        if (fs::exists(w.path)) fs::remove_all(w.path);
        fs::create_directories(w.path.parent_path());
        commit_file(staged, w.path);
    }
    on_signal.release();
    out_dir.keep();
    return written;
}

}  // namespace segrank::synth
