// HDF5 graph store, structure-aware: the input chooses the content of a store (root attributes,
// graph groups and their size attributes, and for each dataset of the schema whether it exists,
// its element type, shape, chunking, deflate level, checksums and values), the store is written
// through data/h5_file (so the file is well-formed HDF5) and fuzz/store_read.h reads it. This
// drives every check of our reader with hostile content; `store_raw` also feeds corrupt HDF5 to
// libhdf5.
#include <fuzzer/FuzzedDataProvider.h>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "data/graph.h"
#include "data/graph_store.h"
#include "data/h5_file.h"
#include "fuzz/fuzz_util.h"
#include "fuzz/store_read.h"

using namespace segrank;

namespace {

// Sizes the schema expects; datasets follow them unless the input says otherwise.
struct Sizes {
    int64_t n, m, c, nc;
};

std::string pick(FuzzedDataProvider& p, std::initializer_list<const char*> usual) {
    const size_t k = p.ConsumeIntegralInRange<size_t>(0, usual.size());
    if (k < usual.size()) return usual.begin()[k];
    return p.ConsumeRandomLengthString(24);
}

int64_t small_int(FuzzedDataProvider& p, int64_t usual) {
    switch (p.ConsumeIntegralInRange<int>(0, 7)) {
        case 0:
            return p.ConsumeIntegral<int64_t>();
        case 1:
            return p.ConsumeIntegralInRange<int64_t>(-2, 40);
        default:
            return usual;
    }
}

template <typename T>
T value(FuzzedDataProvider& p, const Sizes& s) {
    if constexpr (std::is_floating_point_v<T>) {
        switch (p.ConsumeIntegralInRange<int>(0, 15)) {
            case 0:
                return std::numeric_limits<T>::quiet_NaN();
            case 1:
                return std::numeric_limits<T>::infinity();
            case 2:
                return p.ConsumeFloatingPoint<T>();
            default:
                return static_cast<T>(p.ConsumeIntegralInRange<int>(-1, 5)) +
                       (p.ConsumeBool() ? T(0.5) : T(0));
        }
    } else {
        if (p.ConsumeIntegralInRange<int>(0, 15) == 0) return p.ConsumeIntegral<T>();
        return static_cast<T>(p.ConsumeIntegralInRange<int64_t>(-1, std::max<int64_t>(s.n, 5)));
    }
}

template <typename T>
void write_values(FuzzedDataProvider& p, H5Group& g, const std::string& name,
                  const std::vector<int64_t>& shape, const Sizes& s, const H5WriteOptions& opt) {
    int64_t total = 1;
    for (int64_t d : shape) total *= d;
    std::vector<T> v(static_cast<size_t>(total));
    // Runs of one value keep inputs short: (count, value) pairs until the data is filled.
    for (size_t i = 0; i < v.size();) {
        const size_t run = p.ConsumeIntegralInRange<size_t>(1, 64);
        const T x = value<T>(p, s);
        for (size_t k = 0; k < run && i < v.size(); ++k, ++i) v[i] = x;
    }
    g.write<T>(name, shape, std::span<const T>(v), opt);
}

// Writes dataset `name` with schema shape `usual` (or another one), some element type and layout.
void dataset(FuzzedDataProvider& p, H5Group& g, const std::string& name, std::vector<int64_t> shape,
             H5Type usual, const Sizes& s) {
    if (p.ConsumeIntegralInRange<int>(0, 15) == 0) return;  // missing
    H5Type t = usual;
    if (p.ConsumeIntegralInRange<int>(0, 7) == 0)
        t = static_cast<H5Type>(p.ConsumeIntegralInRange<int>(0, 5));
    if (p.ConsumeIntegralInRange<int>(0, 7) == 0) {
        shape.resize(p.ConsumeIntegralInRange<size_t>(1, 3));
        for (auto& d : shape) d = p.ConsumeIntegralInRange<int64_t>(0, 24);
    }
    for (auto& d : shape) d = std::clamp<int64_t>(d, 0, 4096);
    int64_t total = 1;
    for (int64_t d : shape) total *= d;
    if (total > 20000) return;
    H5WriteOptions opt;
    // Mostly checksummed as the writer does (a format_version 2 store refuses a dataset without
    // chunk_xxh3), sometimes not.
    opt.checksum = p.ConsumeIntegralInRange<int>(0, 15) != 0;
    if (p.ConsumeBool()) {
        opt.chunk_rows = p.ConsumeIntegralInRange<int64_t>(1, 8);
        opt.deflate_level = p.ConsumeIntegralInRange<int>(0, 9);
    }
    switch (t) {
        case H5Type::kF32:
            write_values<float>(p, g, name, shape, s, opt);
            break;
        case H5Type::kF64:
            write_values<double>(p, g, name, shape, s, opt);
            break;
        case H5Type::kI64:
            write_values<int64_t>(p, g, name, shape, s, opt);
            break;
        case H5Type::kI32:
            write_values<int32_t>(p, g, name, shape, s, opt);
            break;
        case H5Type::kI8:
            write_values<int8_t>(p, g, name, shape, s, opt);
            break;
        case H5Type::kU8:
            write_values<uint8_t>(p, g, name, shape, s, opt);
            break;
    }
}

void graph(FuzzedDataProvider& p, H5Group& graphs, const std::string& name) {
    H5Group g = graphs.create_group(name);
    Sizes s;
    s.n = p.ConsumeIntegralInRange<int64_t>(0, 12);
    s.m = p.ConsumeIntegralInRange<int64_t>(0, 16);
    s.c = p.ConsumeIntegralInRange<int64_t>(0, 6);
    s.nc = p.ConsumeIntegralInRange<int64_t>(0, std::max<int64_t>(s.n, 1));
    if (p.ConsumeBool()) g.set_attr("source_file", pick(p, {"a.npz"}));
    const char* attrs[] = {"num_nodes", "num_edges", "num_configs", "num_config_nodes"};
    const int64_t values[] = {s.n, s.m, s.c, s.nc};
    for (int k = 0; k < 4; ++k)
        if (p.ConsumeIntegralInRange<int>(0, 15) != 0)
            g.set_attr(attrs[k], small_int(p, values[k]));
    dataset(p, g, "node_feat", {s.n, kNodeFeatDim}, H5Type::kF32, s);
    dataset(p, g, "node_opcode", {s.n}, H5Type::kU8, s);
    dataset(p, g, "edge_index", {s.m, 2}, H5Type::kI64, s);
    dataset(p, g, "config_runtime", {s.c}, H5Type::kI64, s);
    dataset(p, g, "config_feat", {s.c, kTileConfigDim}, H5Type::kF32, s);
    dataset(p, g, "config_runtime_normalizers", {s.c}, H5Type::kI64, s);
    dataset(p, g, "node_config_ids", {s.nc}, H5Type::kI64, s);
    dataset(p, g, "node_config_feat", {s.c, s.nc, kLayoutConfigDim}, H5Type::kI8, s);
    dataset(p, g, "node_splits", {p.ConsumeIntegralInRange<int64_t>(0, 4)}, H5Type::kI64, s);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    FuzzedDataProvider p(data, size);
    const auto path = fuzz::write_temp("h5", nullptr, 0);
    try {
        H5File f = H5File::create(path);
        H5Group root = f.root();
        if (p.ConsumeIntegralInRange<int>(0, 31) != 0)
            root.set_attr("format", pick(p, {"segrank-graph-store"}));
        if (p.ConsumeIntegralInRange<int>(0, 31) != 0)
            root.set_attr("format_version", small_int(p, kGraphStoreVersion));
        const std::string coll = pick(p, {"layout:xla:random", "tile:xla", "layout:nlp:default"});
        if (p.ConsumeIntegralInRange<int>(0, 31) != 0) root.set_attr("collection", coll);
        if (p.ConsumeIntegralInRange<int>(0, 31) != 0)
            root.set_attr("task", coll.substr(0, coll.find(':')));
        if (p.ConsumeIntegralInRange<int>(0, 31) != 0)
            root.set_attr("split", pick(p, {"train", "valid", "test", "unknown"}));
        if (p.ConsumeIntegralInRange<int>(0, 31) != 0) {
            H5Group graphs = root.create_group("graphs");
            const int k = p.ConsumeIntegralInRange<int>(0, 2);
            for (int i = 0; i < k; ++i) graph(p, graphs, i == 0 ? "g" : "h");
        }
        f.close();
    } catch (const Error&) {
        return 0;  // the writer refused the content (e.g. an invalid group name)
    }
    fuzz::read_every_graph(path);
    return 0;
}
