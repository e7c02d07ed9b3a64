// DIR/.synth-manifest of `segrank synth`: one header line, then the collection splits it wrote,
// one relative path a line, sorted.
#include "cli/synth_manifest.h"

#include <algorithm>
#include <fstream>
#include <set>
#include <string>
#include <system_error>

#include "data/collection.h"
#include "gnn/core/check.h"
#include "hwmodel/synth/writer.h"
#include "util/atomic_file.h"

namespace segrank::cli {
namespace {

namespace fs = std::filesystem;

const char* const kHeader =
    "# segrank synth output: the collection splits below were written by "
    "segrank synth (--force replaces them as a whole)";

// Every path synth can write under --out, relative: both tasks, the three splits, npz and HDF5.
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

}  // namespace

std::vector<fs::path> read_synth_manifest(const fs::path& out) {
    const fs::path file = out / kSynthManifest;
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(file, ec))) return {};
    std::ifstream in(file);
    SEGRANK_CHECK(in.good() && fs::is_regular_file(file, ec), file.string(),
                  ": cannot read the synth manifest (a regular file)");
    const std::set<std::string> valid = synth_targets();
    std::vector<fs::path> splits;
    int64_t line_no = 0;
    for (std::string line; std::getline(in, line);) {
        ++line_no;
        if (line.empty() || line.front() == '#') continue;
        SEGRANK_CHECK(valid.count(line), file.string(), ": line ", line_no, ": '", line,
                      "' is not a collection split segrank synth writes (expected a path such as "
                      "npz/tile/xla/train, npz/layout/xla/random/valid or h5/tile_xla_test.h5); "
                      "remove the file if it is not synth's");
        splits.emplace_back(line);
    }
    SEGRANK_CHECK(!in.bad(), file.string(), ": cannot read the synth manifest");
    return splits;
}

std::vector<fs::path> update_synth_manifest(const fs::path& out,
                                            const std::vector<fs::path>& earlier,
                                            const std::vector<fs::path>& written, bool force) {
    std::set<std::string> listed;
    for (const fs::path& p : written) listed.insert(p.generic_string());
    std::vector<fs::path> removed;
    for (const fs::path& rel : earlier) {
        if (listed.count(rel.generic_string())) continue;
        std::error_code ec;
        const bool exists = fs::exists(fs::symlink_status(out / rel, ec));
        if (!force) {
            if (exists) listed.insert(rel.generic_string());
            continue;
        }
        if (!exists) continue;
        fs::remove_all(out / rel, ec);
        SEGRANK_CHECK(!ec, "synth --force: cannot remove the earlier collection split ",
                      (out / rel).string(), ": ", ec.message());
        removed.push_back(rel);
        // The folders only that split lived in (npz/tile/xla, npz/tile, ...), never --out itself.
        for (fs::path dir = rel.parent_path(); !dir.empty(); dir = dir.parent_path()) {
            if (!fs::is_empty(out / dir, ec) || ec) break;
            fs::remove(out / dir, ec);
        }
    }
    std::string text = std::string(kHeader) + "\n";
    for (const std::string& p : listed) text += p + "\n";
    write_file_atomically(out / kSynthManifest, text);
    return removed;
}

}  // namespace segrank::cli
