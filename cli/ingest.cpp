// `segrank ingest <file.pb> --out <dir> [--split S] [--search S] [--force]`: raw XLA tuning
// protobufs -> TpuGraphs npz files in the standard collection layout
// (docs/files.md#protobuf-ingest, docs/files.md#node-features). Everything is featurized and
// validated, and every target checked, before anything is written.
#include "cli/ingest.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdio>
#include <cxxopts.hpp>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "data/graph.h"
#include "data/hlo/featurizer.h"
#include "data/hlo/proto_reader.h"
#include "gnn/core/check.h"
#include "hwmodel/loop_trips.h"
#include "util/atomic_file.h"
#include "util/dir_lock.h"
#include "util/signal_cleanup.h"
#include "util/user_input.h"

namespace segrank::cli {
namespace {

namespace fs = std::filesystem;

// What every npz file ingest writes adds to its folder's path at least: the shortest module file
// ("m.npz") with libzip's temporary suffix (a pid of up to 10 digits, then ".XXXXXX").
constexpr std::string_view kShortestModuleTemp = "m.npz.tmp-4294967295.XXXXXX";
constexpr std::string_view kTempSuffix = ".tmp-4294967295.XXXXXX";

std::string parse_choice(const std::string& flag, const std::string& v,
                         const std::vector<std::string>& valid) {
    if (std::find(valid.begin(), valid.end(), v) != valid.end()) return v;
    std::string list;
    for (const auto& s : valid) list += (list.empty() ? "" : ", ") + s;
    throw Error(str("--", flag, " '", v, "' is not one of: ", list));
}

// File stem from a module name: keeps [A-Za-z0-9._-], maps anything else to '_'.
std::string sanitize(const std::string& name) {
    std::string s;
    for (char ch : name) {
        const bool ok = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
                        (ch >= '0' && ch <= '9') || ch == '.' || ch == '_' || ch == '-';
        s += ok ? ch : '_';
    }
    if (s.empty() || s.front() == '.') s = "module" + s;
    return s;
}

// One featurized module and where it goes (or why it is skipped).
struct Planned {
    std::string module;
    std::variant<std::monostate, TileGraph, LayoutGraph> graph;
    std::string skip_reason;
    int64_t total_runs = 0;
    int64_t error_runs = 0;
    fs::path target;
};

template <typename G>
void fill_range(const G& g, int64_t& lo, int64_t& hi) {
    lo = g.config_runtime.empty()
             ? 0
             : *std::min_element(g.config_runtime.begin(), g.config_runtime.end());
    hi = g.config_runtime.empty()
             ? 0
             : *std::max_element(g.config_runtime.begin(), g.config_runtime.end());
}

// The minor_to_major entries of `mt`'s kept layout runs that featurize_layout encodes (tensors
// 0..2, dims 0..5) must be dimension indices of a rank <= 6 shape, -1..5
// (docs/files.md#layout-config- features): a corrupt file decodes to other values, which are named
// here in the protobuf's terms instead of as an npz key later. Throws segrank::Error naming
// `where`, the module, the run, the configurable node, the tensor and the dim.
void check_layout_dims(const hlo::ModuleTuning& mt, const std::string& where) {
    static const char* const kTensor[] = {"output", "input", "kernel"};
    for (size_t r = 0; r < mt.runs.size(); ++r) {
        const hlo::Run& run = mt.runs[r];
        if (run.kind != Task::kLayout || run.error || !run.has_profile) continue;
        for (size_t k = 0; k < run.layout.size(); ++k) {
            const auto& tensors = run.layout[k].tensors;
            for (size_t t = 0; t < tensors.size() && t < 3; ++t)
                for (size_t d = 0; d < tensors[t].size() && d < 6; ++d) {
                    const int32_t v = tensors[t][d];
                    SEGRANK_CHECK(v >= -1 && v <= 5, where, " (module '", mt.module.name,
                                  "'): runs[", r, "].module_config.layout_config.nodes[", k,
                                  "]: tensor ", t, " (", kTensor[t], ") minor_to_major[", d,
                                  "] = ", v,
                                  ", expected a dimension index in [-1, 5] (a shape of rank <= "
                                  "6): the file is corrupt");
                }
        }
    }
}

void print_summary(const std::vector<Planned>& plan) {
    std::printf("%-28s %-6s %7s %7s %13s %6s %25s  %s\n", "module", "task", "nodes", "edges",
                "kept/total", "errors", "runtime ns (min-max)", "output");
    for (const Planned& p : plan) {
        if (p.skip_reason.size()) {
            std::printf("%-28s %-6s skipped: %s\n", p.module.c_str(), "-", p.skip_reason.c_str());
            continue;
        }
        const GraphStructure& s =
            std::holds_alternative<TileGraph>(p.graph)
                ? static_cast<const GraphStructure&>(std::get<TileGraph>(p.graph))
                : std::get<LayoutGraph>(p.graph);
        int64_t lo = 0, hi = 0, kept = 0;
        if (const auto* t = std::get_if<TileGraph>(&p.graph)) {
            fill_range(*t, lo, hi);
            kept = t->num_configs();
        } else {
            const auto& l = std::get<LayoutGraph>(p.graph);
            fill_range(l, lo, hi);
            kept = l.num_configs();
        }
        const std::string kt = str(kept, "/", p.total_runs);
        const std::string range = str(lo, "-", hi);
        std::printf("%-28s %-6s %7lld %7lld %13s %6lld %25s  %s\n", p.module.c_str(),
                    std::holds_alternative<TileGraph>(p.graph) ? "tile" : "layout",
                    static_cast<long long>(s.num_nodes()), static_cast<long long>(s.num_edges()),
                    kt.c_str(), static_cast<long long>(p.error_runs), range.c_str(),
                    p.target.string().c_str());
    }
}

// Featurizes module `i` of `file` (tile or layout, by its first run) and plans its target under
// req.npz_root: the graph, validated, or why the reference pipeline skips the module. `used` counts
// the targets taken so far, so that modules of one name get "_2", "_3", ... Throws segrank::Error
// naming the input and the module.
Planned plan_module(const hlo::TuningFile& file, size_t i, const IngestRequest& req,
                    std::map<fs::path, int>& used) {
    const fs::path& input = req.input;
    const fs::path& out = req.npz_root;
    const LabelPolicy labels =
        req.split == "test" ? LabelPolicy::kAllowTestZeros : LabelPolicy::kRequirePositive;
    const hlo::ModuleTuning& mt = file.modules[i];
    const std::string where = file.kind == hlo::TuningFileKind::kTuningData
                                  ? str(input.string(), ": modules[", i, "]")
                                  : input.string();
    Planned p;
    p.module = mt.module.name.empty() ? str("modules[", i, "]") : mt.module.name;
    p.total_runs = static_cast<int64_t>(mt.runs.size());
    p.error_runs =
        std::count_if(mt.runs.begin(), mt.runs.end(), [](const hlo::Run& r) { return r.error; });
    const auto task = hlo::detect_task(mt);
    fs::path dir;
    if (!task) {
        p.skip_reason =
            mt.runs.empty() ? "no runs" : "first run has neither op_config nor module_config";
    } else if (*task == Task::kTile) {
        auto res = hlo::featurize_tile(mt, where);
        p.skip_reason = res.skip_reason;
        if (res.graph) p.graph = std::move(*res.graph);
        dir = out / "tile" / "xla" / req.split;
    } else {
        auto res = hlo::featurize_layout(mt, where);
        p.skip_reason = res.skip_reason;
        if (res.graph) {
            check_layout_dims(mt, where);
            // The loops' trip counts beside the features (docs/files.md#loop-trip-counts).
            res.graph->node_loop_trips = hw::node_loop_trips(mt.module);
            p.graph = std::move(*res.graph);
        }
        dir = out / "layout" / "xla" / req.search / req.split;
    }
    if (p.skip_reason.empty()) {
        const std::string stem = sanitize(mt.module.name);
        fs::path target = dir / (stem + ".npz");
        if (const int k = used[target]++; k > 0) target = dir / str(stem, "_", k + 1, ".npz");
        p.target = target;
        if (auto* t = std::get_if<TileGraph>(&p.graph)) {
            t->source = input;
            validate(*t, labels, where);
        } else {
            auto& l = std::get<LayoutGraph>(p.graph);
            l.source = input;
            validate(l, labels, where);
        }
    }
    return p;
}

// plan_module for every module of `file`, in file order.
std::vector<Planned> plan_modules(const hlo::TuningFile& file, const IngestRequest& req) {
    std::vector<Planned> plan;
    std::map<fs::path, int> used;  // target -> times used, to keep names unique within one file
    for (size_t i = 0; i < file.modules.size(); ++i)
        plan.push_back(plan_module(file, i, req, used));
    return plan;
}

// A zip archive's first bytes: the head of an npz file (an earlier ingest's output).
bool is_npz_head(std::string_view head) { return head.rfind("PK\x03\x04", 0) == 0; }

// --force replaces only npz files: `target` (followed through symbolic links, as every segrank
// output) must be missing, empty or an npz file. Throws segrank::Error naming `target`, what it is
// and, for a symbolic link, the file it leads to.
void refuse_replacing_non_npz(const fs::path& target) {
    try {
        refuse_replacing_other_file("--out file", target.string(), is_npz_head, "an npz file",
                                    "segrank ingest --force");
    } catch (const Error& e) {
        std::error_code ec;
        if (!fs::is_symlink(target, ec)) throw;
        throw Error(str(e.what(), " (", target.string(), " is a symbolic link to '",
                        fs::read_symlink(target, ec).string(), "')"));
    }
}

// Returns how many modules of `plan` are written. Throws segrank::Error naming `input` when no
// module could be converted, listing (the first five) targets that exist unless `force`, or (with
// `force`) naming a target that is no npz file, also through a symbolic link (a text file, a
// folder, a FIFO): --force replaces only npz files. Also throws naming the module whose file
// (with its temporary suffix) would have a name over NAME_MAX or a path over PATH_MAX.
int64_t check_targets(const std::vector<Planned>& plan, const fs::path& input, bool force) {
    std::vector<std::string> existing;
    int64_t to_write = 0;
    for (const Planned& p : plan) {
        if (!p.skip_reason.empty()) continue;
        ++to_write;
        // A module name of 300 bytes, or one that makes the path (with its temporary suffix)
        // longer than PATH_MAX, is named here, before anything is written.
        if (const auto why = path_length_problem(p.target.native() + std::string(kTempSuffix))) {
            const bool long_name =
                p.target.filename().native().size() + kTempSuffix.size() > NAME_MAX;
            throw Error(str(input.string(), ": module '", echo_value(p.module),
                            "' would be written to ", echo_value(p.target.string(), 200),
                            ", but with its temporary suffix (", kTempSuffix, ") ", *why, ": ",
                            long_name ? "the module's name is too long for a file name"
                                      : "give a shorter --out"));
        }
        std::error_code ec;
        if (!fs::exists(fs::symlink_status(p.target, ec))) continue;
        existing.push_back(p.target.string());
        if (force) refuse_replacing_non_npz(p.target);
    }
    SEGRANK_CHECK(to_write > 0, input.string(), ": no module could be converted (", plan.size(),
                  " module(s), all skipped)");
    if (!existing.empty() && !force) {
        std::string list;
        for (size_t i = 0; i < existing.size() && i < 5; ++i) list += "\n  " + existing[i];
        if (existing.size() > 5) list += str("\n  ... and ", existing.size() - 5, " more");
        throw Error(str(existing.size(),
                        " target file(s) already exist; nothing was written (use --force to "
                        "overwrite):",
                        list));
    }
    return to_write;
}

// Removes the temporary npz files ("<file>.npz.tmp-PID", libzip's "<file>.npz.tmp-PID.XXXXXX")
// that killed ingests left in the folders `plan` writes into.
void remove_stale_npz_temporaries(const std::vector<Planned>& plan) {
    std::set<fs::path> dirs;
    for (const Planned& p : plan)
        if (p.skip_reason.empty()) dirs.insert(p.target.parent_path());
    for (const fs::path& d : dirs) remove_stale_temp_files(d);
}

// Makes the folder of `target` (a CreatedDirectories, appended to `made`) and, with `on_signal`,
// has SIGINT / SIGTERM / SIGHUP remove the outermost folder it created, `target` unless it
// existed, and its temporaries ("<target>.tmp-PID", libzip's "<target>.tmp-PID.XXXXXX"). Signals
// are held meanwhile, so a folder is never made without being listed.
void prepare_target(const fs::path& target, bool existed, RemoveOnTermination* on_signal,
                    std::vector<std::unique_ptr<CreatedDirectories>>& made) {
    const SignalsHeld held;
    made.push_back(std::make_unique<CreatedDirectories>(target.parent_path()));
    if (!on_signal) return;
    if (!made.back()->created().empty()) on_signal->add(made.back()->created().front());
    if (!existed) on_signal->add(target);
    on_signal->add_prefixed(target.parent_path(), str(target.filename().string(), ".tmp-",
                                                      static_cast<long>(::getpid())));
}

// Writes the npz file of every planned module, creating its folder. A failure on the way removes
// the files written so far that did not exist before, then (destructors, innermost first) the
// folders this command created, and rethrows. Appends what was added to `*written` (when not null).
void write_planned(const std::vector<Planned>& plan, RemoveOnTermination* on_signal,
                   IngestWritten* written) {
    std::vector<std::unique_ptr<CreatedDirectories>> made;
    std::vector<fs::path> new_files;
    try {
        for (const Planned& p : plan) {
            if (!p.skip_reason.empty()) continue;
            const bool existed = fs::exists(fs::symlink_status(p.target));
            prepare_target(p.target, existed, on_signal, made);
            if (const auto* t = std::get_if<TileGraph>(&p.graph))
                save_tile_npz(*t, p.target);
            else
                save_layout_npz(std::get<LayoutGraph>(p.graph), p.target);
            if (!existed) new_files.push_back(p.target);
        }
    } catch (...) {
        std::error_code ec;
        for (const auto& f : new_files) fs::remove(f, ec);
        while (!made.empty()) made.pop_back();
        throw;
    }
    for (auto& m : made) {
        if (written)
            written->folders.insert(written->folders.end(), m->created().begin(),
                                    m->created().end());
        m->keep();
    }
    if (written) written->files.insert(written->files.end(), new_files.begin(), new_files.end());
}

}  // namespace

int run_ingest(int argc, char** argv) {
    cxxopts::Options options(
        "segrank ingest",
        "Convert a raw XLA tuning protobuf (tpu_graphs TuningData or ModuleTuningData) into "
        "TpuGraphs\n"
        "npz files, one per module: tile kernels go to <out>/npz/tile/xla/<split>/, layout modules "
        "to\n"
        "<out>/npz/layout/xla/<search>/<split>/ (without npz/ when <out> is itself a collection "
        "root:\n"
        "named npz, or holding tile/ or layout/). Files are named after the module (sanitized).\n"
        "Measured runtimes are kept in every split. Nothing is written if any target exists\n"
        "(unless --force) or any module fails to convert.");
    options.add_options()("out", "output root directory", cxxopts::value<std::string>())(
        "split", "train | valid | test", cxxopts::value<std::string>()->default_value("train"))(
        "search", "layout search space: random | default",
        cxxopts::value<std::string>()->default_value("random"))(
        "force",
        "overwrite existing npz files (only npz files: any other file, also through a "
        "symbolic link, is refused)")("input", "tuning .pb file", cxxopts::value<std::string>())(
        "h,help", "show help");
    options.parse_positional({"input"});
    options.positional_help("<file.pb> --out <dir>");
    const auto parsed = parse_or_help(options, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    SEGRANK_CHECK(args.count("input"), "missing <file.pb> (see segrank ingest --help)");
    SEGRANK_CHECK(args.count("out"), "missing --out <dir> (see segrank ingest --help)");
    SEGRANK_CHECK(!args["out"].as<std::string>().empty(),
                  "--out: expected an output folder, got an empty path '' (give '.' for the "
                  "current folder)");
    const fs::path input = args["input"].as<std::string>();
    const fs::path out = args["out"].as<std::string>();
    const std::string split =
        parse_choice("split", args["split"].as<std::string>(), {"train", "valid", "test"});
    const std::string search =
        parse_choice("search", args["search"].as<std::string>(), {"random", "default"});
    const bool force = args.count("force") > 0;
    // Before anything is created (CreatedDirectories): not "cannot create directory ...: File
    // exists / File name too long". The longest name written is a module's libzip temporary; the
    // module names are checked once read (check_targets).
    refuse_long_path("--out", out.native(),
                     str("/npz/layout/xla/", search, "/", split, "/", kShortestModuleTemp));
    refuse_dangling_link("--out", out);

    // One writer per output folder (synth, pack, ingest), held for the whole ingest, so the
    // no-overwrite check and the writes of two ingests into one --out cannot interleave (a loser
    // keeps the folder the holder writes into).
    CreatedDirectories created(out);
    std::optional<OutputDirLock> lock;
    try {
        lock.emplace(out, "ingest");
    } catch (...) {
        created.keep();
        throw;
    }
    // Ended by SIGINT / SIGTERM / SIGHUP: the same cleanup as a failed ingest (the npz files it
    // wrote, its temporaries, the folders it created; --out goes whole when this run created it).
    const fs::path outermost = created.created().empty() ? fs::path() : created.created().front();
    RemoveOnTermination on_signal(
        outermost,
        outermost.empty()
            ? str("segrank ingest: interrupted; removed the npz files, temporary files and folders "
                  "this run had written under --out ",
                  out.string(), "\n")
            : str("segrank ingest: interrupted; removed ", outermost.string(),
                  ", which this run created for --out ", out.string(), "\n"));
    IngestRequest req;
    req.input = input;
    // Into the collections a data root already reads (data/collection.cpp discover_collections):
    // DIR/npz/, or DIR itself when it is a collection root (named npz, or holding tile/ or
    // layout/), so the ingested modules never sit beside them unread.
    req.npz_root = npz_root_of(out);
    req.split = split;
    req.search = search;
    req.force = force;
    req.on_signal = &on_signal;
    ingest_tuning_file(req, nullptr);
    on_signal.release();
    created.keep();
    return 0;
}

fs::path npz_root_of(const fs::path& root_in) {
    fs::path root = root_in.lexically_normal();
    if (root.filename().empty()) root = root.parent_path();  // "x/npz/"
    std::error_code ec;
    if (fs::is_directory(root / "npz", ec)) return root / "npz";
    if (root.filename() == "npz" || fs::is_directory(root / "tile", ec) ||
        fs::is_directory(root / "layout", ec))
        return root;
    return root / "npz";
}

int64_t remove_ingested(const IngestWritten& written) noexcept {
    int64_t n = 0;
    std::error_code ec;
    for (const auto& f : written.files)
        if (fs::remove(f, ec)) ++n;
    for (auto it = written.folders.rbegin(); it != written.folders.rend(); ++it)
        if (fs::is_empty(*it, ec) && fs::remove(*it, ec)) ++n;
    return n;
}

void ingest_tuning_file(const IngestRequest& req, IngestWritten* written) {
    const hlo::TuningFile file = hlo::read_tuning_file(req.input);
    const std::vector<Planned> plan = plan_modules(file, req);
    const int64_t to_write = check_targets(plan, req.input, req.force);
    remove_stale_npz_temporaries(plan);
    write_planned(plan, req.on_signal, written);
    std::printf("ingested %s (%s, %zu module(s)): %lld npz file(s) under %s\n",
                req.input.string().c_str(), hlo::to_string(file.kind), plan.size(),
                static_cast<long long>(to_write), req.npz_root.string().c_str());
    print_summary(plan);
}

}  // namespace segrank::cli
