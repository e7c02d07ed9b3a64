// `segrank pack <collection dir> --out <file.h5 | dir>`: npz collection splits -> one HDF5 graph
// store per split (docs/files.md#hdf5-store). Stores are written to temporary names and renamed.
#include <algorithm>
#include <cstdio>
#include <cxxopts.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "cli/options.h"
#include "data/collection.h"
#include "data/graph_store.h"
#include "gnn/core/check.h"
#include "util/atomic_file.h"
#include "util/dir_lock.h"
#include "util/signal_cleanup.h"

namespace segrank::cli {

namespace {

// A path for comparison: symbolic links and ".." resolved as far as the path exists.
std::filesystem::path resolved(const std::filesystem::path& p) {
    std::error_code ec;
    std::filesystem::path r = std::filesystem::weakly_canonical(std::filesystem::absolute(p), ec);
    if (ec) r = std::filesystem::absolute(p).lexically_normal();
    if (r.filename().empty()) r = r.parent_path();  // "dir/" -> "dir"
    return r;
}

// --out inside the input folder would write the stores into the folder pack reads: a later
// `segrank stats` or data.root of it sees both the npz collections and the stores.
void refuse_out_inside_input(const std::filesystem::path& input, const std::filesystem::path& out) {
    const std::filesystem::path in = resolved(input), o = resolved(out);
    const auto [ie, oe] = std::mismatch(in.begin(), in.end(), o.begin(), o.end());
    (void)oe;
    SEGRANK_CHECK(ie != in.end(), "--out ", out.string(), ": is inside the input folder ",
                  input.string(), " (", o.string(), " is under ", in.string(),
                  "): pack would write its stores into the folder it reads; give an --out outside "
                  "the input folder");
}

// Where collection split c is written.
std::filesystem::path store_path(const Collection& c, const std::filesystem::path& out,
                                 bool single_file) {
    return single_file ? out : out / (c.id.file_stem() + ".h5");
}

// Packs every collection split; appends each store path to `written` before writing it.
void pack_all(const std::vector<Collection>& collections, const std::filesystem::path& out,
              bool single_file, const GraphStoreOptions& opt,
              std::vector<std::filesystem::path>& written, bool guarded) {
    for (const auto& c : collections) {
        const auto path = store_path(c, out, single_file);
        written.push_back(path);
        GraphStoreWriter w(path, c.id, c.dir, opt);
        // Killed by SIGINT / SIGTERM / SIGHUP: no temporary store stays behind (a folder pack
        // created is removed whole by the caller's guard instead).
        std::optional<RemoveOnTermination> on_signal;
        if (!guarded) on_signal.emplace(w.temp_path());
        const LabelPolicy labels = label_policy(c.id.split);
        for (const auto& f : c.files) {
            if (c.id.task == Task::kTile) {
                w.add(load_tile_npz(f, labels));
            } else {
                w.add(load_layout_npz(f, labels));
            }
        }
        w.finish();
        std::printf("packed %s: %lld graphs from %s -> %s\n", c.id.full_name().c_str(),
                    static_cast<long long>(w.size()), c.dir.string().c_str(),
                    path.string().c_str());
    }
}

// A single --out store named like a collection split's store ("layout_xla_random_valid.h5", the
// names a folder of stores is read by) must hold that collection split: throws segrank::Error
// naming --out, both collection splits and the name to give, before any work.
void check_store_name(const Collection& c, const std::filesystem::path& input,
                      const std::filesystem::path& out) {
    const std::string stem = out.stem().string();
    for (Task task : {Task::kTile, Task::kLayout})
        for (Source source : {Source::kXla, Source::kNlp})
            for (Search search : {Search::kNone, Search::kDefault, Search::kRandom})
                for (Split split : {Split::kTrain, Split::kValid, Split::kTest}) {
                    if ((task == Task::kTile) != (search == Search::kNone)) continue;
                    const CollectionId named{task, source, search, split};
                    if (named.file_stem() != stem || named == c.id) continue;
                    throw Error(str(
                        "--out ", out.string(), ": is the store name of collection split ",
                        named.full_name(), ", but ", input.string(), " holds ", c.id.full_name(),
                        ": a folder of stores would read it as ", named.full_name(), "; name it ",
                        c.id.split == Split::kUnknown ? std::string()
                                                      : c.id.file_stem() + ".h5 or ",
                        "a name that is no collection split's"));
                }
}

}  // namespace

int run_pack(int argc, char** argv) {
    cxxopts::Options options("segrank pack",
                             "Pack npz collection splits into HDF5 graph stores (one per split).\n"
                             "<collection dir> may be the TpuGraphs npz/ folder, its parent, or a "
                             "folder of npz files of one task.");
    options.add_options()("out", "output .h5 file (exactly one collection split) or directory",
                          cxxopts::value<std::string>())(
        "chunk-kib", "target KiB per config-tensor chunk",
        cxxopts::value<int64_t>()->default_value("32"))("deflate",
                                                        "deflate level 0..9 for config tensors",
                                                        cxxopts::value<int>()->default_value("4"))(
        "force", "replace stores that already exist (a run trained on them would see other data)")(
        "input", "collection directory", cxxopts::value<std::string>())("h,help", "show help");
    options.parse_positional({"input"});
    options.positional_help("<collection dir> --out <file.h5|dir>");
    const auto parsed = parse_or_help(options, argc, argv);
    if (!parsed) return 0;
    const cxxopts::ParseResult& args = *parsed;
    SEGRANK_CHECK(args.count("input"), "missing <collection dir> (see segrank pack --help)");
    SEGRANK_CHECK(args.count("out"), "missing --out <file.h5|dir> (see segrank pack --help)");
    SEGRANK_CHECK(!args["out"].as<std::string>().empty(),
                  "--out: expected an output .h5 file or folder, got an empty path '' (give '.' "
                  "for the current folder)");
    GraphStoreOptions opt;
    opt.chunk_bytes = args["chunk-kib"].as<int64_t>() * 1024;
    opt.deflate_level = args["deflate"].as<int>();
    SEGRANK_CHECK(opt.chunk_bytes > 0, "--chunk-kib must be > 0");
    SEGRANK_CHECK(opt.deflate_level >= 0 && opt.deflate_level <= 9, "--deflate must be in 0..9");

    const std::filesystem::path input = args["input"].as<std::string>();
    const std::filesystem::path out = args["out"].as<std::string>();
    const auto collections = discover_collections(input);
    refuse_out_inside_input(input, out);
    const bool single_file = out.extension() == ".h5";
    if (single_file) {
        check_output_option("--out", out.string());  // a FIFO or folder, before any work
        std::string names;
        for (const auto& c : collections) names += " " + c.id.full_name();
        SEGRANK_CHECK(collections.size() == 1, "--out ", out.string(), ": ", input.string(),
                      " holds ", collections.size(), " collection splits (", names,
                      " ); give a directory to write one store per split");
        check_store_name(collections.front(), input, out);
    }
    // One writer per output folder (synth, pack, ingest), held for the whole pack and taken before
    // the checks below, so a second pack cannot pass them while the first writes (a loser keeps
    // the folder the holder writes into).
    const bool made_dir = !single_file && !std::filesystem::exists(out);
    std::optional<CreatedDirectories> created;
    if (!single_file) created.emplace(out);
    std::optional<OutputDirLock> lock;
    try {
        lock.emplace(single_file ? (out.has_parent_path() ? out.parent_path() : ".") : out, "pack");
    } catch (...) {
        if (created) created->keep();
        throw;
    }
    // Replacing a store changes the data under any run trained on it: only with --force (as
    // ingest).
    std::string existing;
    for (const auto& c : collections)
        if (std::filesystem::exists(store_path(c, out, single_file)))
            existing += " " + store_path(c, out, single_file).string();
    SEGRANK_CHECK(existing.empty() || args.count("force"), "--out ", out.string(),
                  ": store(s) already exist:", existing, "; pass --force to replace them");
    // --force replaces graph stores only: a checkpoint (HDF5 too) or any other file named like a
    // store is refused, before any work.
    for (const auto& c : collections) {
        const std::filesystem::path p = store_path(c, out, single_file);
        std::error_code ec;
        if (!std::filesystem::is_regular_file(p, ec) || is_graph_store_file(p)) continue;
        throw Error(str("--out ", out.string(), ": ", p.string(), " is ", describe_file_kind(p),
                        ", not a segrank graph store: --force replaces only stores written by "
                        "segrank pack; give another path or remove the file"));
    }
    // On any error (e.g. a truncated npz) leave nothing behind: no partial stores, no empty --out
    // dir.
    // Temporary stores of earlier pack runs that were killed (their pid is gone).
    if (single_file)
        remove_stale_temp_files(out.has_parent_path() ? out.parent_path() : ".",
                                out.filename().string() + ".tmp-");
    else if (!made_dir)
        remove_stale_temp_files(out);
    std::vector<std::filesystem::path> written;
    try {
        // A folder this command created goes whole on SIGINT / SIGTERM / SIGHUP.
        std::optional<RemoveOnTermination> on_signal;
        if (made_dir) on_signal.emplace(out);
        pack_all(collections, out, single_file, opt, written, made_dir);
    } catch (...) {
        std::error_code ec;
        for (const auto& p : written)  // stores only: never a device, FIFO or link given as --out
            if (std::filesystem::is_regular_file(std::filesystem::symlink_status(p, ec)))
                std::filesystem::remove(p, ec);
        if (made_dir && std::filesystem::is_empty(out, ec)) std::filesystem::remove(out, ec);
        throw;
    }
    if (created) created->keep();
    return 0;
}

}  // namespace segrank::cli
