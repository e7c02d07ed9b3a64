// Collection discovery and naming (docs/files.md#collections-on-disk, docs/files.md#real-data).
#include "data/collection.h"

#include <sys/stat.h>

#include <algorithm>
#include <cctype>
#include <cerrno>

#include "data/graph_store.h"
#include "data/npz.h"
#include "gnn/core/check.h"
#include "util/user_input.h"

namespace segrank {
namespace {
constexpr EnumName<StoreFormat> kStoreFormatNames[] = {{StoreFormat::kNpz, "npz"},
                                                       {StoreFormat::kHdf5, "hdf5"}};
}  // namespace

std::span<const EnumName<StoreFormat>> enum_names(StoreFormat) { return kStoreFormatNames; }
StoreFormat parse_store_format(std::string_view s) {
    return parse_enum<StoreFormat>("store format", s);
}
std::string_view to_string(StoreFormat f) { return enum_name(f); }

const char* to_string(Source s) { return s == Source::kXla ? "xla" : "nlp"; }
const char* to_string(Search s) {
    switch (s) {
        case Search::kNone:
            return "";
        case Search::kDefault:
            return "default";
        case Search::kRandom:
            return "random";
    }
    return "";
}
const char* to_string(Split s) {
    switch (s) {
        case Split::kTrain:
            return "train";
        case Split::kValid:
            return "valid";
        case Split::kTest:
            return "test";
        case Split::kUnknown:
            return "unknown";
    }
    return "unknown";
}

Source parse_source(std::string_view s) {
    if (s == "xla") return Source::kXla;
    if (s == "nlp") return Source::kNlp;
    throw Error(str("unknown source '", s, "' (expected xla or nlp)"));
}
Search parse_search(std::string_view s) {
    if (s.empty()) return Search::kNone;
    if (s == "default") return Search::kDefault;
    if (s == "random") return Search::kRandom;
    throw Error(str("unknown search '", s, "' (expected default or random)"));
}
Split parse_split(std::string_view s) {
    if (s == "train") return Split::kTrain;
    if (s == "valid") return Split::kValid;
    if (s == "test") return Split::kTest;
    if (s == "unknown") return Split::kUnknown;
    throw Error(str("unknown split '", s, "' (expected train, valid, test or unknown)"));
}

std::string CollectionId::name() const {
    std::string s = str(to_string(task), ":", to_string(source));
    if (task == Task::kLayout) s += str(":", to_string(search));
    return s;
}
std::string CollectionId::full_name() const { return name() + ":" + to_string(split); }
std::string CollectionId::file_stem() const {
    std::string s = full_name();
    std::replace(s.begin(), s.end(), ':', '_');
    return s;
}

CollectionId CollectionId::parse(std::string_view text) {
    std::vector<std::string> parts;
    std::string cur;
    for (char ch : text) {
        if (ch == ':') {
            parts.push_back(cur);
            cur.clear();
        } else {
            cur += ch;
        }
    }
    parts.push_back(cur);
    CollectionId id;
    SEGRANK_CHECK(parts.size() >= 2, "malformed collection name '", text,
                  "' (expected tile:xla[:split] or layout:<xla|nlp>:<default|random>[:split])");
    id.task = parse_task(parts[0]);
    id.source = parse_source(parts[1]);
    size_t next = 2;
    if (id.task == Task::kLayout) {
        SEGRANK_CHECK(parts.size() >= 3, "collection name '", text, "' lacks the search part");
        id.search = parse_search(parts[2]);
        SEGRANK_CHECK(id.search != Search::kNone, "collection name '", text,
                      "' lacks the search part");
        next = 3;
    }
    SEGRANK_CHECK(id.task == Task::kLayout || id.source == Source::kXla, "collection '", text,
                  "': tile collections are xla only");
    if (parts.size() > next) id.split = parse_split(parts[next++]);
    SEGRANK_CHECK(parts.size() == next, "malformed collection name '", text, "'");
    return id;
}

LabelPolicy label_policy(Split s) {
    return s == Split::kTrain || s == Split::kValid ? LabelPolicy::kRequirePositive
                                                    : LabelPolicy::kAllowTestZeros;
}

Task infer_task(const std::filesystem::path& npz_file) {
    NpzReader z(npz_file);
    const bool tile = z.contains("config_feat");
    const bool layout = z.contains("node_config_feat");
    SEGRANK_CHECK(tile != layout, npz_file.string(),
                  ": cannot infer the task: expected key 'config_feat' (tile) or "
                  "'node_config_feat' (layout)",
                  tile ? ", found both" : ", found neither");
    return tile ? Task::kTile : Task::kLayout;
}

void check_listed_file(const std::filesystem::directory_entry& e, std::string_view what) {
    std::error_code ec;
    if (e.is_regular_file(ec)) return;
    if (e.is_symlink(ec)) {
        struct stat st {};
        if (::stat(e.path().c_str(), &st) != 0 && errno == ELOOP)  // self.npz -> self.npz
            throw Error(str(e.path().string(), ": ", *describe_link_problem(e.path(), ELOOP)));
        const auto target = std::filesystem::read_symlink(e.path(), ec);
        SEGRANK_CHECK(std::filesystem::exists(e.path(), ec), e.path().string(),
                      ": broken symbolic link (to '", target.string(), "', which does not exist)");
    }
    throw Error(str(e.path().string(), ": not a regular file (expected a .", what, " file)"));
}

std::optional<char> bad_graph_name_char(std::string_view name) {
    for (const char ch : name) {
        const auto u = static_cast<unsigned char>(ch);
        if (ch == ',' || u < 0x20 || u == 0x7f) return ch;
    }
    return std::nullopt;
}

namespace {

// A graph's name (the npz file stem): see bad_graph_name_char.
void check_graph_name(const std::filesystem::path& npz) {
    const auto ch = bad_graph_name_char(npz.stem().string());
    if (!ch) return;
    const std::string full = npz.string();
    throw Error(str(
        echo_value(full, full.size()), ": graph name (the file name without .npz) contains '",
        echo_value(std::string_view(&*ch, 1)), "' (", kBadGraphNameReason, "); rename the file"));
}

std::vector<std::filesystem::path> npz_files(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> out;
    if (!std::filesystem::is_directory(dir)) return out;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() != ".npz") continue;
        check_listed_file(e, "npz");
        check_graph_name(e.path());
        out.push_back(e.path());
    }
    std::sort(out.begin(), out.end(),
              [](const auto& a, const auto& b) { return a.filename() < b.filename(); });
    return out;
}

void add_if_any(std::vector<Collection>& out, const CollectionId& id,
                const std::filesystem::path& dir) {
    auto files = npz_files(dir);
    if (!files.empty()) out.push_back({id, dir, std::move(files)});
}

// Lower-case words of the last few path components ("tile_xla_test" -> tile, xla, test).
std::vector<std::string> path_words(const std::filesystem::path& dir) {
    std::vector<std::string> words;
    std::filesystem::path p = std::filesystem::absolute(dir).lexically_normal();
    if (p.filename().empty()) p = p.parent_path();
    for (int k = 0; k < 4 && !p.filename().empty(); ++k, p = p.parent_path()) {
        std::string cur;
        for (char ch : p.filename().string() + "_") {
            if (std::isalnum(static_cast<unsigned char>(ch))) {
                cur += static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
            } else if (!cur.empty()) {
                words.push_back(cur);
                cur.clear();
            }
        }
    }
    return words;
}

}  // namespace

void OneSourcePerSplit::add(const CollectionId& id, const std::string& where) {
    const std::string name = id.full_name();
    for (const auto& [n, w] : seen_)
        SEGRANK_CHECK(n != name, where, ": collection ", name, " is also in ", w,
                      "; a data folder holds one store (or npz folder) per collection split, so "
                      "that no graph is read twice: remove or move one of them");
    seen_.emplace_back(name, where);
}

std::vector<Collection> discover_collections(const std::filesystem::path& root_in) {
    require_input_folder(root_in, "a folder of npz collections");
    std::filesystem::path root = root_in;
    if (std::filesystem::is_directory(root / "npz")) {
        // npz/ is read instead of the root's own folders: both there is one root in two places
        // (e.g. `segrank ingest --out ROOT` into a root of tile/ and layout/), never half-read.
        for (const char* task : {"tile", "layout"})
            SEGRANK_CHECK(!std::filesystem::is_directory(root / task), root_in.string(),
                          ": holds both npz/ and ", task,
                          "/ (collections in two places); a data root is read from its npz/ "
                          "when it has one, so ",
                          (root / task).string(),
                          " would be ignored: move its collections into npz/ (or npz/ out of "
                          "it)");
        root /= "npz";
    }
    std::vector<Collection> out;
    const Split splits[] = {Split::kTrain, Split::kValid, Split::kTest};
    for (Split sp : splits) {
        add_if_any(out, {Task::kTile, Source::kXla, Search::kNone, sp},
                   root / "tile" / "xla" / to_string(sp));
    }
    for (Source so : {Source::kXla, Source::kNlp}) {
        for (Search se : {Search::kDefault, Search::kRandom}) {
            for (Split sp : splits) {
                add_if_any(out, {Task::kLayout, so, se, sp},
                           root / "layout" / to_string(so) / to_string(se) / to_string(sp));
            }
        }
    }
    if (!out.empty()) return out;

    auto files = npz_files(root_in);
    if (files.empty()) {
        std::vector<std::filesystem::path> stores;  // say so when the folder holds graph stores
        try {
            stores = list_graph_stores(root_in);
        } catch (const std::exception&) {
        }
        throw Error(str(
            root_in.string(),
            ": no npz collections found (expected npz/tile/xla/{train,valid,test}/, "
            "npz/layout/{xla,nlp}/{default,random}/{train,valid,test}/ or a folder of .npz files)",
            stores.empty()
                ? std::string()
                : str("; it holds ", stores.size(), " HDF5 graph store(s) (",
                      stores.front().filename().string(), stores.size() > 1 ? ", ..." : "",
                      "), which this command does not read: give the npz folder they were "
                      "packed from")));
    }
    CollectionId id;
    id.task = infer_task(files.front());
    const auto words = path_words(root_in);
    auto has = [&](const char* w) {
        return std::find(words.begin(), words.end(), w) != words.end();
    };
    id.source = has("nlp") ? Source::kNlp : Source::kXla;
    if (id.task == Task::kLayout) id.search = has("random") ? Search::kRandom : Search::kDefault;
    // The nearest folder name wins: words are ordered from the innermost component outwards.
    for (const auto& w : words) {
        if (w == "train" || w == "valid" || w == "test") {
            id.split = parse_split(w);
            break;
        }
    }
    out.push_back({id, root_in, std::move(files)});
    return out;
}

}  // namespace segrank
