// Run-directory integrity: lock, resume checks (config and data) and cleanup of failed fresh runs.
#include "trainer/run_dir.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "data/graph_digest.h"
#include "gnn/core/check.h"
#include "gnn/core/hash.h"
#include "trainer/checkpoint.h"
#include "trainer/config_schema.h"
#include "util/signal_cleanup.h"
#include "util/signal_relay.h"

namespace segrank {

namespace fs = std::filesystem;

namespace {

// dotted key -> value (TOML spelling) of every key, from dump_config: `key = value   # doc`.
std::vector<std::pair<std::string, std::string>> config_values(const RunConfig& cfg) {
    std::map<std::string, std::string> docs;
    for (const auto& k : config_keys()) docs[k.key] = k.doc;
    std::vector<std::pair<std::string, std::string>> out;
    std::istringstream is(dump_config(cfg));
    std::string section;
    for (std::string line; std::getline(is, line);) {
        if (line.empty() || line[0] == '#') continue;
        if (line[0] == '[') {
            section = line.substr(1, line.find(']') - 1);
            continue;
        }
        const auto eq = line.find(" = ");
        SEGRANK_ASSERT(eq != std::string::npos, "dump_config line without ' = ': ", line);
        const std::string key = str(section, ".", line.substr(0, eq));
        std::string value = line.substr(eq + 3);
        const auto it = docs.find(key);
        SEGRANK_ASSERT(it != docs.end(), "dump_config key not in config_keys(): ", key);
        const std::string comment = "# " + it->second;
        SEGRANK_ASSERT(value.size() >= comment.size() && value.ends_with(comment),
                       "dump_config line of ", key, " does not end with its doc comment");
        value.resize(value.size() - comment.size());
        while (!value.empty() && value.back() == ' ') value.pop_back();
        out.emplace_back(key, value);
    }
    return out;
}

struct ManifestLine {
    std::string role, collection, name, nodes, edges, configs;
    std::string labels;  ///< "configs=<16 hex>" (config rows and runtimes); empty when absent
    std::string graph;   ///< "graph=<16 hex>" (features, opcodes, edges, ...); empty when absent
    std::string key() const { return str(role, " graph '", name, "' (", collection, ")"); }
    std::string sizes() const {
        return str(nodes, " nodes, ", edges, " edges, ", configs, " configs");
    }
};

std::vector<ManifestLine> parse_manifest(std::string_view text) {
    std::vector<ManifestLine> out;
    std::istringstream is{std::string(text)};
    for (std::string line; std::getline(is, line);) {
        if (line.empty()) continue;
        std::vector<std::string> f;
        std::istringstream ls(line);
        for (std::string field; std::getline(ls, field, '\t');) f.push_back(field);
        f.resize(8);
        out.push_back({f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7]});
    }
    return out;
}

}  // namespace

bool resume_may_change(std::string_view key) {
    static constexpr std::string_view kTrain[] = {
        "train.steps",     "train.epochs",           "train.eval_every",
        "train.log_every", "train.progress",         "train.threads",
        "train.run_dir",   "train.checkpoint_every", "train.patience"};
    for (auto k : kTrain)
        if (key == k) return true;
    return (key.starts_with("eval.") && key != "eval.metric") || key.starts_with("dist.");
}

std::vector<std::pair<std::string, std::pair<std::string, std::string>>> config_differences(
    const RunConfig& before, const RunConfig& after) {
    const auto a = config_values(before);
    const auto b = config_values(after);
    SEGRANK_ASSERT(a.size() == b.size(), "dump_config wrote different key counts");
    std::vector<std::pair<std::string, std::pair<std::string, std::string>>> out;
    for (size_t i = 0; i < a.size(); ++i) {
        SEGRANK_ASSERT(a[i].first == b[i].first, "dump_config key order differs");
        if (a[i].second != b[i].second) out.push_back({a[i].first, {a[i].second, b[i].second}});
    }
    return out;
}

void check_resume_config(const RunConfig& run, const RunConfig& now, const fs::path& run_dir) {
    std::string problems;
    for (const auto& [key, values] : config_differences(run, now)) {
        if (resume_may_change(key)) continue;
        problems +=
            str(problems.empty() ? "" : "\n", "--resume ", run_dir.string(), ": ", key, " was ",
                values.first, " in the run, now ", values.second, "; resuming cannot change it");
    }
    if (!problems.empty()) throw Error(problems);
}

namespace {

// A resume appends to metrics.jsonl and replaces config.toml, report.json and the checkpoints
// where they are: through a symbolic link it would write into the link's target (a user's file,
// another run's checkpoint). Refused, naming the file and its target.
void refuse_linked_run_files(const fs::path& run_dir) {
    for (const char* f : {"config.toml", "metrics.jsonl", "report.json", "report.html",
                          "best.ckpt.h5", "last.ckpt.h5", "partitions"}) {
        const fs::path p = run_dir / f;
        std::error_code ec;
        if (!fs::is_symlink(fs::symlink_status(p, ec))) continue;
        throw Error(str("--resume ", run_dir.string(), ": ", p.string(),
                        " is a symbolic link (to '", fs::read_symlink(p, ec).string(),
                        "'); resuming writes the run's files in place and would write through it "
                        "into its target: put a copy of the file there instead of the link"));
    }
}

// --resume of a run without last.ckpt.h5: throws segrank::Error saying what to do. A run whose
// last.ckpt.h5 could not be written (a full disk: the failed write leaves no file) may still hold
// best.ckpt.h5, a complete checkpoint of the same run (same state, written at an earlier step).
[[noreturn]] void missing_last_checkpoint(const fs::path& run_dir) {
    const fs::path last = run_dir / "last.ckpt.h5", best = run_dir / "best.ckpt.h5";
    std::error_code ec;
    if (fs::is_regular_file(best, ec)) {
        std::string step = "?";
        try {
            step = std::to_string(CheckpointReader(best).step());
        } catch (const Error&) {
        }
        throw Error(str("--resume ", run_dir.string(), ": no checkpoint '", last.string(),
                        "': the run has best.ckpt.h5 (step ", step,
                        ") but no last.ckpt.h5 (was the disk full when it was written?): copy ",
                        best.string(), " to ", last.string(), " to continue from step ", step,
                        ", or start over with --overwrite"));
    }
    throw Error(str("--resume ", run_dir.string(), ": no checkpoint '", last.string(),
                    "' (the run wrote none: start it again without --resume, with --overwrite if "
                    "the folder is refused)"));
}

}  // namespace

void check_resume_start(const RunConfig& now, const fs::path& run_dir) {
    refuse_linked_run_files(run_dir);
    const fs::path stored = run_dir / "config.toml";
    SEGRANK_CHECK(fs::is_regular_file(stored), "--resume ", run_dir.string(),
                  ": no config.toml in it");
    const fs::path ckpt = run_dir / "last.ckpt.h5";
    if (!fs::exists(ckpt)) missing_last_checkpoint(run_dir);
    CheckpointReader r(ckpt);
    const auto text = r.attr_string("config_toml");
    const RunConfig run = text ? load_stored_config(*text, ckpt.string() + ":config_toml")
                               : load_config(stored.string());
    check_resume_config(run, now, run_dir);
    SEGRANK_CHECK(
        now.train.epochs > 0 || now.train.steps > r.step(), "--resume ", run_dir.string(),
        ": the checkpoint is at step ", r.step(), " and train.steps = ", now.train.steps,
        ", so there is nothing left to train",
        r.step() < static_cast<int64_t>(cfg::detail::kMaxTrainSteps)
            ? str("; raise it, e.g. --set train.steps=",
                  std::min(r.step() + 1000, static_cast<int64_t>(cfg::detail::kMaxTrainSteps)))
            : str(": it is at the last step a run records (train.steps <= ",
                  static_cast<int64_t>(cfg::detail::kMaxTrainSteps),
                  "), so this run cannot train further; start another one"));
}

std::string content_columns(const GraphEntry& e) {
    SEGRANK_CHECK(e.source != nullptr, "graph '", e.name, "' has no source to read its data from");
    const GraphDigest d = graph_digest(*e.source, e.index);
    return str("configs=", hash_hex(d.configs), "\tgraph=", hash_hex(d.structure));
}

std::string data_manifest(const std::vector<GraphEntry>& train,
                          const std::vector<GraphEntry>& eval) {
    std::string out;
    std::map<std::pair<const GraphSource*, int64_t>, std::string> digests;  // a graph read once
    auto add = [&](const char* role, const std::vector<GraphEntry>& entries) {
        for (const auto& e : entries) {
            auto [it, fresh] = digests.try_emplace({e.source, e.index});
            if (fresh) it->second = content_columns(e);
            out += str(role, "\t", e.collection.name(), "\t", e.name, "\t", e.info.num_nodes, "\t",
                       e.info.num_edges, "\t", e.info.num_configs, "\t", it->second, "\n");
        }
    };
    add("train", train);
    add("eval", eval);
    return out;
}

std::string data_fingerprint(std::string_view manifest) {
    uint64_t h = 14695981039346656037ull;
    for (unsigned char c : manifest) {
        h ^= c;
        h *= 1099511628211ull;
    }
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

void check_data_manifest(std::string_view stored, const std::vector<GraphEntry>& train,
                         const std::vector<GraphEntry>& eval, const fs::path& ckpt) {
    check_data_manifest(stored, data_manifest(train, eval), train, eval, ckpt);
}

void check_data_manifest(std::string_view stored, std::string_view current,
                         const std::vector<GraphEntry>& train, const std::vector<GraphEntry>& eval,
                         const fs::path& ckpt) {
    if (current == stored) return;
    const auto was = parse_manifest(stored);
    const auto now = parse_manifest(current);
    auto entry_at = [&](size_t i) -> const GraphEntry& {
        return i < train.size() ? train[i] : eval[i - train.size()];
    };
    auto where = [&](size_t i) {
        const GraphEntry& e = entry_at(i);
        return e.source ? e.source->where(e.index) : e.info.source.string();
    };
    const std::string head = str(
        "--resume: the data differs from the data the run was trained on (", ckpt.string(), "): ");
    for (size_t i = 0; i < std::min(was.size(), now.size()); ++i) {
        const auto& a = was[i];
        const auto& b = now[i];
        if (a.role == b.role && a.collection == b.collection && a.name == b.name) {
            if (a.sizes() != b.sizes())
                throw Error(str(head, b.key(), " had ", a.sizes(), ", now ", b.sizes(), " (file ",
                                where(i), ")"));
            const bool tile = entry_at(i).collection.task == Task::kTile;
            if (!a.labels.empty() && a.labels != b.labels)
                throw Error(str(
                    head, b.key(), " has the same sizes but other runtimes or config rows (",
                    "config_runtime",
                    tile ? ", config_runtime_normalizers or config_feat" : " or node_config_feat",
                    " changed, or its rows were reordered; file ", where(i), ")"));
            if (!a.graph.empty() && a.graph != b.graph)
                throw Error(str(head, b.key(),
                                " has the same sizes but other graph data (node_feat, node_opcode, "
                                "edge_index",
                                tile ? "" : ", node_config_ids or node_splits", " changed; file ",
                                where(i), ")"));
            continue;  // empty columns: an older manifest, compared by sizes
        }
        throw Error(str(head, "expected ", a.key(), " at position ", i, ", found ", b.key(),
                        " (file ", where(i), "); the store or data.root was replaced"));
    }
    if (now.size() == was.size()) return;  // only the labels column of an older checkpoint
    if (now.size() > was.size())
        throw Error(str(head, now[was.size()].key(), " is new (file ", where(was.size()), ")"));
    throw Error(str(head, was[now.size()].key(), " is missing from the data (", was.size(),
                    " graphs in the run, ", now.size(), " now)"));
}

RunDirCleanup::RunDirCleanup(fs::path dir) : dir_(std::move(dir)) {
    std::error_code ec;
    existed_ = fs::is_directory(dir_, ec);
    if (!existed_) {
        // The folders above it that the run will create too (innermost first): a failed run
        // leaves none of them, as it leaves no run directory.
        const fs::path abs = fs::absolute(dir_, ec).lexically_normal();
        for (fs::path p = abs.parent_path(); !p.empty() && p != p.root_path();
             p = p.parent_path()) {
            std::error_code pec;
            if (fs::exists(fs::symlink_status(p, pec))) break;
            created_parents_.push_back(p);
        }
        return;
    }
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
        std::error_code tec;
        before_[e.path().filename().string()] = fs::last_write_time(e.path(), tec);
    }
}

int64_t RunDirCleanup::remove_created() const noexcept {
    std::error_code ec;
    if (!fs::is_directory(dir_, ec)) return 0;
    for (const char* f : {"last.ckpt.h5", "best.ckpt.h5"})
        if (fs::exists(dir_ / f, ec)) return 0;  // resumable: keep the run
    if (!existed_) {
        fs::remove_all(dir_, ec);
        if (ec) {
            std::fprintf(stderr, "segrank train: cannot remove '%s': %s\n", dir_.c_str(),
                         ec.message().c_str());
            return 0;
        }
        for (const fs::path& p : created_parents_) {  // only while empty (rmdir)
            std::error_code pec;
            if (!fs::remove(p, pec)) break;
        }
        return 1;
    }
    int64_t removed = 0;
    std::vector<fs::path> doomed;
    for (const auto& e : fs::directory_iterator(dir_, ec)) {
        const std::string name = e.path().filename().string();
        std::error_code tec;
        const auto t = fs::last_write_time(e.path(), tec);
        const auto it = before_.find(name);
        if (name == ".lock" && it != before_.end()) continue;  // an earlier run's lock file: keep
        if (it == before_.end() || it->second != t) doomed.push_back(e.path());
    }
    for (const auto& p : doomed) {
        std::error_code rec;
        fs::remove_all(p, rec);
        if (rec)
            std::fprintf(stderr, "segrank train: cannot remove '%s': %s\n", p.c_str(),
                         rec.message().c_str());
        else
            ++removed;
    }
    return removed;
}

namespace {

// State of the armed termination cleanup, prepared outside the handler (fixed buffers only).
constexpr size_t kMaxPath = kSignalSafeMaxPath;
constexpr int kMaxDoomed = 8;
struct TerminationCleanup {
    volatile sig_atomic_t armed = 0;
    bool whole_dir = false;              // the run directory did not exist before
    char dir[kMaxPath] = {};             // the run directory
    char checkpoints[2][kMaxPath] = {};  // best / last: present = keep everything
    char temps[2][kMaxPath] = {};        // their temporary files: removed in any case
    char doomed[kMaxDoomed][kMaxPath] = {};
    int num_doomed = 0;
    char parents[kMaxDoomed][kMaxPath] = {};  // created above a new run directory, innermost first
    int num_parents = 0;
};
TerminationCleanup g_cleanup;
constexpr int kCleanupSignals[] = {SIGTERM, SIGINT, SIGHUP};

extern "C" void run_dir_termination_handler(int sig) {
    if (g_cleanup.armed) {
        g_cleanup.armed = 0;
        const bool checkpointed = ::access(g_cleanup.checkpoints[0], F_OK) == 0 ||
                                  ::access(g_cleanup.checkpoints[1], F_OK) == 0;
        // A checkpoint being written when the signal came is never complete.
        for (const char* t : g_cleanup.temps)
            if (t[0] != 0) ::unlink(t);
        if (!checkpointed) {
            if (g_cleanup.whole_dir) {
                remove_tree_signal_safe(g_cleanup.dir);
                for (int k = 0; k < g_cleanup.num_parents; ++k)
                    if (::rmdir(g_cleanup.parents[k]) != 0) break;  // only while empty
            } else {
                for (int k = 0; k < g_cleanup.num_doomed; ++k)
                    remove_tree_signal_safe(g_cleanup.doomed[k]);
            }
        }
    }
    end_by_signal(sig);
}

bool copy_path(char (&dst)[kMaxPath], const fs::path& p) {
    const std::string s = p.string();
    if (s.size() + 1 > kMaxPath) return false;
    std::memcpy(dst, s.c_str(), s.size() + 1);
    return true;
}

}  // namespace

void RunDirCleanup::arm_on_termination() const {
    disarm_on_termination();
    g_cleanup = TerminationCleanup{};
    const fs::path dir = fs::absolute(dir_);
    bool ok = copy_path(g_cleanup.dir, dir) &&
              copy_path(g_cleanup.checkpoints[0], dir / "best.ckpt.h5") &&
              copy_path(g_cleanup.checkpoints[1], dir / "last.ckpt.h5");
    const std::string pid_tmp = ".tmp-" + std::to_string(static_cast<long>(::getpid()));
    ok = ok && copy_path(g_cleanup.temps[0], dir / ("best.ckpt.h5" + pid_tmp)) &&
         copy_path(g_cleanup.temps[1], dir / ("last.ckpt.h5" + pid_tmp));
    g_cleanup.whole_dir = !existed_;
    for (const fs::path& p : created_parents_) {
        if (g_cleanup.num_parents == kMaxDoomed) break;  // the rest stay (empty folders)
        ok = ok && copy_path(g_cleanup.parents[g_cleanup.num_parents++], p);
    }
    if (existed_) {
        const std::string tmp = ".tmp-" + std::to_string(static_cast<long>(::getpid()));
        for (const std::string& name :
             {std::string(".lock"), std::string("config.toml"), std::string("metrics.jsonl"),
              std::string("partitions"), std::string("report.json"), "last.ckpt.h5" + tmp,
              "best.ckpt.h5" + tmp}) {
            if (before_.count(name) > 0 || g_cleanup.num_doomed == kMaxDoomed) continue;
            ok = ok && copy_path(g_cleanup.doomed[g_cleanup.num_doomed++], dir / name);
        }
    }
    if (!ok) return;  // a path too long for the fixed buffers: no cleanup on signals
    struct sigaction sa {};
    sa.sa_handler = run_dir_termination_handler;
    sigemptyset(&sa.sa_mask);
    for (int sig : kCleanupSignals) sigaddset(&sa.sa_mask, sig);
    for (int sig : kCleanupSignals) ::sigaction(sig, &sa, nullptr);
    g_cleanup.armed = 1;
}

void RunDirCleanup::disarm_on_termination() noexcept {
    if (!g_cleanup.armed) return;
    g_cleanup.armed = 0;
    for (int sig : kCleanupSignals) ::signal(sig, SIG_DFL);
}

RunDirCleanup::~RunDirCleanup() { disarm_on_termination(); }

namespace {

// `p` made absolute with symlinks and ".." resolved as far as it exists (lexically beyond).
std::filesystem::path resolved(const std::filesystem::path& p) {
    std::error_code ec;
    std::filesystem::path r = std::filesystem::weakly_canonical(std::filesystem::absolute(p), ec);
    if (ec) r = std::filesystem::absolute(p).lexically_normal();
    // "a/b/" and "a/b" are the same folder: compare without a trailing empty element.
    if (!r.empty() && !r.has_filename()) r = r.parent_path();
    return r;
}

// True when `inner` is `outer` or below it (component by component).
bool is_within(const std::filesystem::path& inner, const std::filesystem::path& outer) {
    auto i = inner.begin();
    for (auto o = outer.begin(); o != outer.end(); ++o, ++i)
        if (i == inner.end() || *i != *o) return false;
    return true;
}

}  // namespace

void check_run_paths(const RunConfig& cfg, const std::filesystem::path& run_dir) {
    const std::string at = key_location(cfg, "data.ingest");
    const std::string where = at.empty() ? "" : at + ": ";
    for (const std::string& pb : cfg.data.ingest) {
        std::error_code ec;
        const auto type = std::filesystem::status(pb, ec).type();
        SEGRANK_CHECK(type != std::filesystem::file_type::not_found, where, "data.ingest: '", pb,
                      "': no such file (expected a raw XLA tuning .pb file to ingest)");
        SEGRANK_CHECK(type == std::filesystem::file_type::regular, where, "data.ingest: '", pb,
                      "' is not a file (expected a raw XLA tuning .pb file to ingest)");
    }
    const std::filesystem::path root = resolved(cfg.data.root), dir = resolved(run_dir);
    SEGRANK_CHECK(!is_within(dir, root), "the run directory '", run_dir.string(),
                  "' (train.run_dir",
                  run_dir.string() == cfg.train.run_dir ? "" : ", --run-dir or --resume", ") is ",
                  dir == root ? "" : "inside ", "data.root '", cfg.data.root,
                  "': the run would write its checkpoints beside the data (choose a run directory "
                  "outside data.root)");
}

}  // namespace segrank
