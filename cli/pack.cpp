// `segrank pack <collection dir> --out <file.h5 | dir>`: npz collection splits -> one HDF5 graph
// store per split (docs/files.md#hdf5-store). Stores are written to temporary names and renamed.
#include <unistd.h>

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

// Every collection split a store can be named for (CollectionId::file_stem() + ".h5").
std::vector<CollectionId> all_collection_splits() {
    std::vector<CollectionId> ids;
    for (Task task : {Task::kTile, Task::kLayout})
        for (Source source : {Source::kXla, Source::kNlp})
            for (Search search : {Search::kNone, Search::kDefault, Search::kRandom})
                for (Split split : {Split::kTrain, Split::kValid, Split::kTest})
                    if ((task == Task::kTile) == (search == Search::kNone))
                        ids.push_back(CollectionId{task, source, search, split});
    return ids;
}

// The longest name pack writes from --out (refuse_long_path): a store's temporary while its writer
// runs, "<store>.tmp-<pid>.tmp-<pid>" (pack's staged name plus the writer's own suffix; pids of up
// to 10 digits), beside --out itself for a single .h5 file, else in the folder.
std::string longest_written(const std::vector<Collection>& collections, bool single_file) {
    constexpr std::string_view kTemp = ".tmp-4294967295.tmp-4294967295";
    std::string longest;
    if (single_file) return std::string(kTemp);
    for (const auto& c : collections) {
        const std::string name = str("/", c.id.file_stem(), ".h5", kTemp);
        if (name.size() > longest.size()) longest = name;
    }
    return longest;
}

// One store of this run: the collection split, its path in --out, and the complete store written
// before anything in --out changes ("<resolved store>.tmp-<pid>" beside it, so the commit is one
// rename and remove_stale_temp_files sweeps it when the run is killed).
struct StagedStore {
    const Collection* collection = nullptr;
    std::filesystem::path target;
    std::filesystem::path staged;
    int64_t graphs = 0;
};

std::vector<StagedStore> plan_stores(const std::vector<Collection>& collections,
                                     const std::filesystem::path& out, bool single_file) {
    std::vector<StagedStore> stores;
    const std::string suffix = ".tmp-" + std::to_string(static_cast<long>(::getpid()));
    for (const auto& c : collections) {
        StagedStore s{&c, store_path(c, out, single_file), {}, 0};
        const OutputTarget t = resolve_output(s.target);  // refuses folders, FIFOs, ...
        s.staged = t.write_through ? std::filesystem::temp_directory_path() /
                                         ("segrank-pack-" + c.id.file_stem() + ".h5" + suffix)
                                   : std::filesystem::path(t.path.string() + suffix);
        stores.push_back(std::move(s));
    }
    return stores;
}

// An error of the store writer names the file it writes ("<store>.tmp-<pid>.tmp-<pid>", pack's
// staged name plus the writer's own suffix): name the store the user asked for instead,
// "<--out store> (being written)".
std::string name_store_being_written(std::string message, const StagedStore& s,
                                     const std::filesystem::path& writing) {
    const std::string shown = s.target.string() + " (being written)";
    for (const std::string& tmp : {writing.string(), s.staged.string()}) {
        for (size_t at = message.find(tmp); at != std::string::npos;
             at = message.find(tmp, at + shown.size()))
            message.replace(at, tmp.size(), shown);
    }
    return message;
}

// Packs every collection split into its staged store; nothing in --out is replaced. Each staged
// store (and the writer's own temporary file) is removed by `on_signal` on SIGINT / SIGTERM /
// SIGHUP, and by the caller on an error.
void pack_staged(std::vector<StagedStore>& stores, const GraphStoreOptions& opt,
                 RemoveOnTermination& on_signal) {
    for (auto& s : stores) {
        const Collection& c = *s.collection;
        // The staged store, and the writer's own temporary file ("<staged>.tmp-<pid>", created
        // by the constructor), before either exists.
        const std::filesystem::path writing =
            s.staged.string() + ".tmp-" + std::to_string(static_cast<long>(::getpid()));
        on_signal.add(s.staged);
        on_signal.add(writing);
        try {
            GraphStoreWriter w(s.staged, c.id, c.dir, opt);
            if (w.temp_path() != writing) on_signal.add(w.temp_path());
            const LabelPolicy labels = label_policy(c.id.split);
            for (const auto& f : c.files) {
                if (c.id.task == Task::kTile) {
                    w.add(load_tile_npz(f, labels));
                } else {
                    w.add(load_layout_npz(f, labels));
                }
            }
            w.finish();
            s.graphs = w.size();
        } catch (const Error& e) {
            throw Error(name_store_being_written(e.what(), s, writing));
        }
    }
}

// The stores of other collection splits that an earlier pack wrote into the folder `out` (graph
// store files, or symbolic links to them, named for a collection split that `stores` does not
// write): --force replaces the folder's set of stores, so these go once the new ones are in place.
std::vector<std::filesystem::path> stale_stores(const std::filesystem::path& out,
                                                const std::vector<StagedStore>& stores) {
    std::vector<std::filesystem::path> stale;
    for (const CollectionId& id : all_collection_splits()) {
        const std::filesystem::path p = out / (id.file_stem() + ".h5");
        const bool replaced = std::any_of(stores.begin(), stores.end(), [&](const StagedStore& s) {
            return s.collection->id == id;
        });
        // A symbolic link to a store counts too (the link goes, its target stays): is_regular_file
        // follows it.
        std::error_code ec;
        if (!replaced && std::filesystem::is_regular_file(p, ec) && is_graph_store_file(p))
            stale.push_back(p);
    }
    return stale;
}

// Renames every staged store into place with SIGINT / SIGTERM / SIGHUP held, then removes the
// stale stores and prints one line per store now in place. A rename that fails (it is one rename
// in one folder, so only a file-system fault) throws naming the stores already replaced.
void commit_stores(std::vector<StagedStore>& stores,
                   const std::vector<std::filesystem::path>& stale,
                   const std::filesystem::path& input, RemoveOnTermination& on_signal) {
    const SignalsHeld held;
    on_signal.release();
    std::string replaced;
    for (size_t i = 0; i < stores.size(); ++i) {
        try {
            commit_file(stores[i].staged, stores[i].target);
        } catch (const Error& e) {
            std::error_code ec;
            for (size_t j = i + 1; j < stores.size(); ++j)
                std::filesystem::remove(stores[j].staged, ec);
            const std::string done = replaced.empty() ? std::string("; no store was replaced")
                                                      : str("; already in place:", replaced);
            throw Error(str(e.what(), done));
        }
        replaced.append(" ").append(stores[i].target.string());
    }
    for (const auto& s : stores)
        std::printf("packed %s: %lld graphs from %s -> %s\n", s.collection->id.full_name().c_str(),
                    static_cast<long long>(s.graphs), s.collection->dir.string().c_str(),
                    s.target.string().c_str());
    for (const auto& p : stale) {
        std::error_code ec;
        const bool link = std::filesystem::is_symlink(std::filesystem::symlink_status(p, ec));
        const std::string target = link ? std::filesystem::read_symlink(p, ec).string() : "";
        std::filesystem::remove(p, ec);  // a symbolic link itself, not the file it points at
        if (ec)
            std::fprintf(stderr, "segrank pack: warning: cannot remove the old store %s: %s\n",
                         p.string().c_str(), ec.message().c_str());
        else if (link)
            std::printf(
                "removed %s (a symbolic link to %s, an earlier store; %s holds no such "
                "collection split; the file it points at is kept)\n",
                p.string().c_str(), target.c_str(), input.string().c_str());
        else
            std::printf("removed %s (an earlier store; %s holds no such collection split)\n",
                        p.string().c_str(), input.string().c_str());
    }
    std::fflush(stdout);
}

// A single --out store named like a collection split's store ("layout_xla_random_valid.h5", the
// names a folder of stores is read by) must hold that collection split: throws segrank::Error
// naming --out, both collection splits and the name to give, before any work.
void check_store_name(const Collection& c, const std::filesystem::path& input,
                      const std::filesystem::path& out) {
    const std::string stem = out.stem().string();
    for (const CollectionId& named : all_collection_splits()) {
        if (named.file_stem() != stem || named == c.id) continue;
        throw Error(
            str("--out ", out.string(), ": is the store name of collection split ",
                named.full_name(), ", but ", input.string(), " holds ", c.id.full_name(),
                ": a folder of stores would read it as ", named.full_name(), "; name it ",
                c.id.split == Split::kUnknown ? std::string() : c.id.file_stem() + ".h5 or ",
                "a name that is no collection split's"));
    }
}

// Replacing a store changes the data under any run trained on it: only with --force (as ingest).
// --force replaces graph stores only: a checkpoint (HDF5 too) or any other file named like a store
// is refused, before any work. Throws segrank::Error naming the files.
void check_replacements(const std::vector<Collection>& collections,
                        const std::filesystem::path& out, bool single_file, bool force) {
    std::string existing;
    for (const auto& c : collections)
        if (std::filesystem::exists(store_path(c, out, single_file)))
            existing += " " + store_path(c, out, single_file).string();
    SEGRANK_CHECK(existing.empty() || force, "--out ", out.string(),
                  ": store(s) already exist:", existing, "; pass --force to replace them");
    for (const auto& c : collections) {
        const std::filesystem::path p = store_path(c, out, single_file);
        std::error_code ec;
        if (!std::filesystem::is_regular_file(p, ec) || is_graph_store_file(p)) continue;
        throw Error(str("--out ", out.string(), ": ", p.string(), " is ", describe_file_kind(p),
                        ", not a segrank graph store: --force replaces only stores written by "
                        "segrank pack; give another path or remove the file"));
    }
}

// Every *.h5 entry of a store folder must be a graph store (list_graph_stores): an existing --out
// folder holding another .h5 file (a checkpoint, a user's HDF5 file, a text file so named) that
// this pack does not replace would make the folder unreadable as a store folder, so it is refused
// before any work, naming the file. Throws segrank::Error.
void check_foreign_h5_files(const std::vector<Collection>& collections,
                            const std::filesystem::path& out) {
    std::error_code ec;
    if (!std::filesystem::is_directory(out, ec)) return;
    std::vector<std::filesystem::path> written;
    for (const auto& c : collections) written.push_back(store_path(c, out, false));
    for (const auto& e : std::filesystem::directory_iterator(out, ec)) {
        const std::filesystem::path p = e.path();
        if (p.extension() != ".h5" || std::find(written.begin(), written.end(), p) != written.end())
            continue;
        std::error_code rec;
        if (std::filesystem::is_regular_file(p, rec) && is_graph_store_file(p)) continue;
        throw Error(str("--out ", out.string(), ": ", p.string(), " is ", describe_file_kind(p),
                        ", not a segrank graph store: every .h5 file of a store folder must be a "
                        "store written by segrank pack, so the folder would not be readable as a "
                        "store folder (stats, train and evaluate would refuse it); nothing was "
                        "written: move or remove the file, or give another --out"));
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
        "force",
        "replace stores that already exist (a run trained on them would see other data); "
        "into a folder, also remove the earlier stores of collection splits the input does not "
        "have, once every new store is written")(
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
    refuse_long_path("--out", out.native());  // not "status '...': File name too long"
    refuse_dangling_link("--out", out);       // "File exists" otherwise; the link is kept
    const auto collections = discover_collections(input);
    refuse_out_inside_input(input, out);
    const bool single_file = out.extension() == ".h5";
    refuse_long_path("--out", out.native(), longest_written(collections, single_file));
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
    check_replacements(collections, out, single_file, args.count("force") > 0);
    if (!single_file) check_foreign_h5_files(collections, out);
    // Temporary stores of earlier pack runs that were killed (their pid is gone).
    if (single_file)
        remove_stale_temp_files(out.has_parent_path() ? out.parent_path() : ".",
                                out.filename().string() + ".tmp-");
    else if (!made_dir)
        remove_stale_temp_files(out);
    std::vector<StagedStore> stores = plan_stores(collections, out, single_file);
    const std::vector<std::filesystem::path> stale = single_file || !args.count("force")
                                                         ? std::vector<std::filesystem::path>{}
                                                         : stale_stores(out, stores);
    // Every store is written completely to its temporary name before any store in --out is
    // replaced: an error (e.g. a truncated npz) or SIGINT / SIGTERM / SIGHUP leaves --out as it
    // was (a folder this command created goes whole).
    const std::filesystem::path outermost_created =
        made_dir && created && !created->created().empty() ? created->created().front() : out;
    RemoveOnTermination on_signal(
        made_dir ? outermost_created : std::filesystem::path(),
        made_dir ? str("segrank pack: interrupted; removed ", outermost_created.string(),
                       ", which this run created for --out ", out.string(), "\n")
                 : str("segrank pack: interrupted; nothing was changed in --out ", out.string(),
                       " (its temporary stores were removed)\n"));
    try {
        pack_staged(stores, opt, on_signal);
    } catch (...) {
        on_signal.release();
        std::error_code ec;
        for (const auto& s : stores) std::filesystem::remove(s.staged, ec);
        throw;
    }
    commit_stores(stores, stale, input, on_signal);
    if (created) created->keep();
    return 0;
}

}  // namespace segrank::cli
