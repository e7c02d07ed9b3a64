// HDF5 graph store reader (docs/files.md#hdf5-store): recognizing and listing stores, the root
// attributes, graph sizes and whole-graph loads; the schema is documented in graph_store.h.
#include "data/graph_store.h"

#include <algorithm>
#include <cstring>
#include <fstream>
#include <optional>

#include "data/collection.h"
#include "data/graph_store_internal.h"
#include "data/input_memory.h"
#include "gnn/core/check.h"
#include "util/user_input.h"

namespace segrank {

bool is_graph_store_file(const std::filesystem::path& path) {
    if (!is_hdf5_file(path)) return false;
    try {
        const H5File file = H5File::open_read(path);
        const auto format = file.root().attr_string("format");
        return format && *format == kGraphStoreFormat;
    } catch (const std::exception&) {
        return false;
    }
}

bool is_hdf5_file(const std::filesystem::path& path) {
    std::ifstream f(path, std::ios::binary);
    char sig[8] = {};
    f.read(sig, 8);
    return f.gcount() == 8 && std::memcmp(sig, "\x89HDF\r\n\x1a\n", 8) == 0;
}

std::vector<std::filesystem::path> list_graph_stores(const std::filesystem::path& dir) {
    std::vector<std::filesystem::path> stores;
    for (const auto& e : std::filesystem::directory_iterator(dir)) {
        if (e.path().extension() != ".h5") continue;
        check_listed_file(e, "h5");
        require_readable_input(e.path(), "a graph store written by `segrank pack`");
        SEGRANK_CHECK(is_hdf5_file(e.path()), e.path().string(),
                      ": not an HDF5 file (no HDF5 signature); every .h5 in a store folder must be "
                      "a graph store written by `segrank pack`");
        stores.push_back(e.path());
    }
    std::sort(stores.begin(), stores.end());
    return stores;
}

std::vector<float> read_loop_trips(const H5Group& gg, int64_t n) {
    if (!gg.has("node_loop_trips")) return {};
    const H5Dataset d = gg.open_dataset("node_loop_trips");
    const auto s = d.shape();
    SEGRANK_CHECK(s.size() == 2 && s[0] == n && s[1] == kLoopTripCols, d.where(),
                  ": expected shape (n, 2) with n = ", n);
    std::vector<float> trips = d.read<float>();
    validate_loop_trips(trips, n, d.where());
    return trips;
}

// ---------------------------------------------------------------------------------------------
// Reader

namespace {

// The collection split a store holds, from its root attributes `collection` (one of the five
// collection names, exactly as the writer writes CollectionId::name()), `task` (which must be the
// collection's) and `split`. Throws naming the file, the attribute and the allowed values.
CollectionId read_store_id(const H5Group& root, const std::filesystem::path& path) {
    const auto coll = root.attr_string("collection");
    SEGRANK_CHECK(coll, path.string(), ": attribute 'collection' required");
    constexpr const char* kNames =
        "tile:xla, layout:xla:default, layout:xla:random, layout:nlp:default, layout:nlp:random";
    std::optional<CollectionId> id;
    try {
        id = CollectionId::parse(*coll);
    } catch (const Error&) {
    }
    SEGRANK_CHECK(id && id->name() == *coll, path.string(), ": attribute 'collection' = '",
                  echo_value(*coll), "' names no collection (expected one of ", kNames, ")");
    const auto task = root.attr_string("task");
    SEGRANK_CHECK(task, path.string(), ": attribute 'task' required");
    SEGRANK_CHECK(*task == "tile" || *task == "layout", path.string(), ": attribute 'task' = '",
                  echo_value(*task), "' is not a task (expected tile or layout)");
    SEGRANK_CHECK(*task == to_string(id->task), path.string(), ": attribute 'task' = '", *task,
                  "' but attribute 'collection' = '", *coll, "' is a ", to_string(id->task),
                  " collection (expected task '", to_string(id->task), "')");
    const auto split = root.attr_string("split");
    SEGRANK_CHECK(split, path.string(), ": attribute 'split' required");
    try {
        id->split = parse_split(*split);
    } catch (const Error& e) {
        throw Error(str(path.string(), ": attribute 'split': ", e.what()));
    }
    return *id;
}

// `segrank pack` names a store after the collection split it holds (CollectionId::file_stem(),
// e.g. layout_xla_random_train.h5). A file so named whose attributes say another split (renamed
// or edited) is refused: readers go by the attributes, so its graphs would silently be read as
// that other split. Other names (s.h5, a copy's name) are not checked.
void check_name_matches_attributes(const CollectionId& id, const std::filesystem::path& path,
                                   const H5Group& root) {
    const std::string stem = path.stem().string();
    std::string text = stem;
    std::replace(text.begin(), text.end(), '_', ':');
    std::optional<CollectionId> named;
    try {
        named = CollectionId::parse(text);
    } catch (const Error&) {
        return;
    }
    if (named->file_stem() != stem || named->full_name() == id.full_name()) return;
    throw Error(str(path.string(), ": the file name says ", named->full_name(),
                    " but attribute 'collection' = '", root.attr_string("collection").value_or(""),
                    "' and attribute 'split' = '", root.attr_string("split").value_or(""),
                    "' (a renamed or edited store: pack the npz folder again, or give the file "
                    "the name ",
                    id.file_stem(), ".h5)"));
}

}  // namespace

GraphStore::GraphStore(const std::filesystem::path& path, std::optional<LabelPolicy> labels)
    : file_(H5File::open_read(path)) {
    const H5Group root = file_.root();
    // The integer version first (it lives in the checksummed object header): an earlier store
    // keeps its string attributes in HDF5's unchecked global heap and is refused unread.
    const std::optional<int64_t> version = root.attr_int("format_version");
    SEGRANK_CHECK(
        version && root.has_attr("format"), path.string(),
        ": not a segrank graph store (attribute 'format' or 'format_version' is missing)");
    SEGRANK_CHECK(*version != 1, path.string(),
                  ": graph store format_version 1, written before store datasets carried an "
                  "xxh3_64 checksum per chunk (HDF5's Fletcher32 alone misses some corruptions, "
                  "e.g. zeros overwritten by 0xFF bytes); this build reads format_version ",
                  kGraphStoreVersion, ": pack it again with `segrank pack --force`");
    SEGRANK_CHECK(*version != 2, path.string(),
                  ": graph store format_version 2, whose string attributes live in HDF5's global "
                  "heap (no checksum: one flipped bit there hangs or crashes the reader); this "
                  "build reads format_version ",
                  kGraphStoreVersion, ": pack it again with `segrank pack --force`");
    SEGRANK_CHECK(*version == kGraphStoreVersion, path.string(),
                  ": attribute 'format_version' = ", *version, ", this build reads ",
                  kGraphStoreVersion);
    const auto format = root.attr_string("format");
    SEGRANK_CHECK(format && *format == kGraphStoreFormat, path.string(),
                  ": not a segrank graph store (attribute 'format' is missing or not '",
                  kGraphStoreFormat, "')");
    file_.require_chunk_hashes();
    id_ = read_store_id(root, path);
    check_name_matches_attributes(id_, path, root);
    labels_ = labels.value_or(label_policy(id_.split));
    names_ = root.open_group("graphs").children();
    for (const std::string& name : names_) {
        const auto ch = bad_graph_name_char(name);
        SEGRANK_CHECK(!ch, path.string(), ": graph '", echo_value(name),
                      "' under /graphs: name contains '", echo_value(std::string_view(&*ch, 1)),
                      "' (", kBadGraphNameReason,
                      "); pack it again from npz files with valid names");
    }
    // finish() writes the count last: a store that disagrees was cut short or edited.
    const auto num_graphs = root.attr_int("num_graphs");
    SEGRANK_CHECK(!num_graphs || *num_graphs == size(), path.string(),
                  ": attribute 'num_graphs' = ", num_graphs.value_or(0), " but the store holds ",
                  size(), " graph(s) under /graphs (an incomplete or edited store: pack it again)");
}

H5Group GraphStore::graph_group(int64_t i) const {
    SEGRANK_CHECK(i >= 0 && i < size(), path().string(), ": graph index ", i, " out of range [0, ",
                  size(), ")");
    return file_.root().open_group("graphs").open_group(names_[static_cast<size_t>(i)]);
}

std::string GraphStore::where(int64_t i) const { return graph_group(i).where(); }

GraphInfo GraphStore::info(int64_t i) const {
    const H5Group gg = graph_group(i);
    GraphInfo info;
    info.name = names_[static_cast<size_t>(i)];
    info.source = gg.attr_string("source_file").value_or("");
    auto need = [&](const char* a) {
        const auto v = gg.attr_int(a);
        SEGRANK_CHECK(v.has_value(), gg.where(), ": missing attribute '", a, "'");
        return *v;
    };
    info.num_nodes = need("num_nodes");
    info.num_edges = need("num_edges");
    info.num_configs = need("num_configs");
    info.num_config_nodes = need("num_config_nodes");
    SEGRANK_CHECK(info.num_configs > 0, gg.where(),
                  ": 0 configs (attribute num_configs = ", info.num_configs,
                  "): a graph needs at least one configuration");
    // The attributes size every chunked read; a store edited by hand must not disagree with its
    // data.
    auto rows_of_dataset = [&](const char* name) {
        const auto shape = gg.open_dataset(name).shape();
        return shape.empty() ? int64_t{0} : shape[0];
    };
    auto agree = [&](const char* attr, int64_t value, const char* dataset) {
        const int64_t rows = rows_of_dataset(dataset);
        SEGRANK_CHECK(rows == value, gg.where(), ": attribute ", attr, " = ", value, " but ",
                      dataset, " has ", rows, " rows");
    };
    agree("num_nodes", info.num_nodes, "node_feat");
    agree("num_edges", info.num_edges, "edge_index");
    agree("num_configs", info.num_configs, "config_runtime");
    if (id_.task == Task::kLayout)
        agree("num_config_nodes", info.num_config_nodes, "node_config_ids");
    return info;
}

void GraphStore::load_structure(const H5Group& gg, int64_t i, GraphStructure& g,
                                bool node_feat) const {
    g.name = names_[static_cast<size_t>(i)];
    g.source = gg.attr_string("source_file").value_or(path().string());
    const H5Dataset nf = gg.open_dataset("node_feat");
    const auto s = nf.shape();
    SEGRANK_CHECK(s.size() == 2 && s[1] == kNodeFeatDim, nf.where(), ": expected shape (n, ",
                  kNodeFeatDim, ")");
    if (node_feat) {
        nf.stored_elements();  // the shape is checked against the file before allocating for it
        g.node_feat = Tensor(s[0], s[1]);
        nf.read<float>(g.node_feat.span());
    } else {
        g.node_feat = Tensor(0, kNodeFeatDim);
    }
    g.node_opcode = gg.open_dataset("node_opcode").read<int32_t>();
    g.edge_index = gg.open_dataset("edge_index").read<int64_t>();
}

TileGraph GraphStore::load_tile(int64_t i, const ConfigRows& rows) const {
    return naming_file_on_oom(path(), [&] {
        SEGRANK_CHECK(id_.task == Task::kTile, path().string(), ": store holds ", id_.name(),
                      ", not tile graphs");
        const H5Group gg = graph_group(i);
        TileGraph g;
        load_structure(gg, i, g);
        const H5Dataset cf = gg.open_dataset("config_feat");
        const auto s = cf.shape();
        SEGRANK_CHECK(s.size() == 2 && s[1] == kTileConfigDim, cf.where(),
                      ": expected shape (c, 24)");
        const std::vector<float> feat = rows_of<float>(cf, rows);
        g.config_feat = Tensor(static_cast<int64_t>(feat.size() / kTileConfigDim), kTileConfigDim);
        std::copy(feat.begin(), feat.end(), g.config_feat.data());
        g.config_runtime = rows_of<int64_t>(gg.open_dataset("config_runtime"), rows);
        g.config_runtime_normalizers =
            rows_of<int64_t>(gg.open_dataset("config_runtime_normalizers"), rows);
        validate(g, labels_, gg.where());
        return g;
    });
}

LayoutGraph GraphStore::load_layout(int64_t i, const ConfigRows& rows) const {
    return naming_file_on_oom(path(), [&] {
        SEGRANK_CHECK(id_.task == Task::kLayout, path().string(), ": store holds ", id_.name(),
                      ", not layout graphs");
        const H5Group gg = graph_group(i);
        LayoutGraph g;
        load_structure(gg, i, g);
        g.node_config_ids = gg.open_dataset("node_config_ids").read<int64_t>();
        const H5Dataset cf = gg.open_dataset("node_config_feat");
        const auto s = cf.shape();
        SEGRANK_CHECK(s.size() == 3 && s[1] == static_cast<int64_t>(g.node_config_ids.size()) &&
                          s[2] == kLayoutConfigDim,
                      cf.where(), ": expected shape (c, nc, 18)");
        g.node_config_feat = rows_of<int8_t>(cf, rows);
        g.config_runtime = rows_of<int64_t>(gg.open_dataset("config_runtime"), rows);
        g.node_splits = gg.open_dataset("node_splits").read<int64_t>();
        g.node_loop_trips = read_loop_trips(gg, g.num_nodes());
        validate(g, labels_, gg.where());
        return g;
    });
}

}  // namespace segrank
