// DIR/.synth-manifest of `segrank synth`: one header line, then the files it wrote, one path
// relative to DIR a line, sorted.
#include "cli/synth_manifest.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <system_error>
#include <utility>

#include "cli/options.h"
#include "data/collection.h"
#include "gnn/core/check.h"
#include "hwmodel/synth/writer.h"
#include "util/atomic_file.h"

namespace segrank::cli {
namespace {

namespace fs = std::filesystem;

const char* const kHeader =
    "# segrank synth output: the files below were written by segrank synth (--force removes "
    "them, and only them, when a later run does not write them again)";

// Every split target synth can write under --out, relative: both tasks, the three splits, npz
// folders and HDF5 stores.
std::set<std::string> synth_targets() {
    std::set<std::string> all;
    for (Task task : {Task::kTile, Task::kLayout})
        for (Split split : {Split::kTrain, Split::kValid, Split::kTest})
            for (StoreFormat format : {StoreFormat::kNpz, StoreFormat::kHdf5}) {
                CollectionId id;
                id.task = task;
                id.source = Source::kXla;
                id.search = task == Task::kTile ? Search::kNone : Search::kRandom;
                id.split = split;
                all.insert(synth::target_path(fs::path(), id, format).generic_string());
            }
    return all;
}

// Whether `name` is a graph file synth writes into an npz folder of `task` ("tile" or "layout"):
// synth_<task>_<6 or more digits>.npz.
bool is_synth_npz_name(const std::string& name, const std::string& task) {
    const std::string prefix = "synth_" + task + "_";
    const std::string suffix = ".npz";
    if (name.size() < prefix.size() + 6 + suffix.size() || name.rfind(prefix, 0) != 0 ||
        name.compare(name.size() - suffix.size(), suffix.size(), suffix) != 0)
        return false;
    const std::string digits =
        name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    return std::all_of(digits.begin(), digits.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// The task of an npz split folder ("npz/tile/xla/train" -> "tile").
std::string folder_task(const std::string& folder) {
    return folder.rfind("npz/tile/", 0) == 0 ? "tile" : "layout";
}

}  // namespace

std::vector<fs::path> split_files(const fs::path& out, const fs::path& target) {
    std::error_code ec;
    const fs::path path = out / target;
    if (!fs::exists(fs::symlink_status(path, ec))) return {};
    if (!fs::is_directory(fs::symlink_status(path, ec))) return {target};
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(path, ec))
        files.push_back(target / e.path().filename());
    SEGRANK_CHECK(!ec, "synth: cannot list ", path.string(), ": ", ec.message());
    std::sort(files.begin(), files.end());
    return files;
}

void check_synth_out(const fs::path& out) {
    std::error_code ec;
    // --out itself or a folder above it that is a dangling link (creating it says "File exists").
    // The longest name synth writes under --out: libzip's temporary of a layout graph in the
    // staging folder (hwmodel/synth/writer.cpp; graph indices have at most 6 digits, pids 10).
    refuse_long_path("--out", out.native(),  // not "status '...': File name too long"
                     "/.synth-staging-4294967295/npz/layout/xla/random/train/"
                     "synth_layout_000000.npz.tmp-4294967295.XXXXXX");
    refuse_dangling_link("--out", out);
    if (!fs::is_directory(out, ec) || fs::exists(fs::symlink_status(out / kSynthManifest, ec)))
        return;
    std::vector<std::string> other;
    for (const auto& e : fs::directory_iterator(out, ec)) {
        const std::string name = e.path().filename().string();
        if (name == "npz" || name == "h5" || name.starts_with(".synth-staging-")) continue;
        other.push_back(name);
    }
    if (other.empty()) return;
    std::sort(other.begin(), other.end(), [](const std::string& a, const std::string& b) {
        return std::pair(a.starts_with('.'), a) < std::pair(b.starts_with('.'), b);  // .lock last
    });
    throw Error(str("--out ", out.string(), ": not empty and not an earlier synth output (no ",
                    kSynthManifest, "), and it holds ", (out / other.front()).string(),
                    other.size() > 1 ? str(" and ", other.size() - 1, " other entries") : "",
                    ", which synth does not write; give a new or empty folder as --out (synth "
                    "writes npz/ or h5/ there)"));
}

std::vector<fs::path> read_synth_manifest(const fs::path& out) {
    const fs::path file = out / kSynthManifest;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(file, ec))) return {};
    std::ifstream in(file);
    SEGRANK_CHECK(in.good() && fs::is_regular_file(file, ec), file.string(),
                  ": cannot read the synth manifest (a regular file)");
    const std::set<std::string> targets = synth_targets();
    std::set<fs::path> files;
    int64_t line_no = 0;
    for (std::string line; std::getline(in, line);) {
        ++line_no;
        if (line.empty() || line.front() == '#') continue;
        const std::string folder = fs::path(line).parent_path().generic_string();
        const bool graph_file =
            targets.count(folder) && folder.rfind("npz/", 0) == 0 &&
            is_synth_npz_name(fs::path(line).filename().string(), folder_task(folder));
        SEGRANK_CHECK(targets.count(line) || graph_file, file.string(), ": line ", line_no, ": '",
                      line,
                      "' is not a file segrank synth writes (expected a path such as "
                      "npz/tile/xla/train/synth_tile_000003.npz or h5/tile_xla_test.h5); "
                      "remove the manifest if it is not synth's");
        if (graph_file || line.rfind("h5/", 0) == 0) {
            files.insert(fs::path(line));
            continue;
        }
        // A whole npz split folder (earlier versions): the synth graph files in it.
        for (const fs::path& f : split_files(out, line))
            if (is_synth_npz_name(f.filename().string(), folder_task(line))) files.insert(f);
    }
    SEGRANK_CHECK(!in.bad(), file.string(), ": cannot read the synth manifest");
    return {files.begin(), files.end()};
}

void check_only_synth_files(const fs::path& out, const std::vector<fs::path>& targets,
                            const std::vector<fs::path>& recorded) {
    const std::set<fs::path> ours(recorded.begin(), recorded.end());
    for (const fs::path& target : targets) {
        std::vector<std::string> foreign;
        for (const fs::path& f : split_files(out, target))
            if (!ours.count(f)) foreign.push_back(f.filename().string());
        if (foreign.empty()) continue;
        std::string names;
        for (size_t i = 0; i < foreign.size() && i < 8; ++i) names += (i ? ", " : "") + foreign[i];
        if (foreign.size() > 8) names += str(" and ", foreign.size() - 8, " more");
        throw Error(str("synth --force: ", (out / target).string(), " holds ", foreign.size(),
                        " file(s) segrank synth did not write (", (out / kSynthManifest).string(),
                        " does not list them): ", names,
                        "; --force replaces only synth's own files: move them away or choose "
                        "another --out"));
    }
}

std::vector<fs::path> update_synth_manifest(const fs::path& out,
                                            const std::vector<fs::path>& earlier,
                                            const std::vector<fs::path>& written, bool force) {
    std::set<fs::path> listed(written.begin(), written.end());
    std::vector<fs::path> removed;
    for (const fs::path& rel : earlier) {
        if (listed.count(rel)) continue;
        std::error_code ec;
        const bool exists = fs::exists(fs::symlink_status(out / rel, ec));
        if (!force) {
            if (exists) listed.insert(rel);
            continue;
        }
        if (!exists) continue;
        fs::remove(out / rel, ec);  // a file: a user's folder of that name is never emptied
        SEGRANK_CHECK(!ec, "synth --force: cannot remove the earlier synth file ",
                      (out / rel).string(), ": ", ec.message());
        removed.push_back(rel);
        // The folders that file leaves empty (npz/tile/xla/train, npz/tile, ...), never --out.
        for (fs::path dir = rel.parent_path(); !dir.empty(); dir = dir.parent_path()) {
            if (!fs::is_empty(out / dir, ec) || ec) break;
            fs::remove(out / dir, ec);
        }
    }
    std::string text = std::string(kHeader) + "\n";
    for (const fs::path& p : listed) text += p.generic_string() + "\n";
    write_file_atomically(out / kSynthManifest, text);
    return removed;
}

}  // namespace segrank::cli
