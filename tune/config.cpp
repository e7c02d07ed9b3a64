// Config rows, their dedupe key and readable form; TuneGraph over the two npz records.
#include "tune/config.h"

#include <cstring>
#include <sstream>

#include "gnn/core/check.h"

namespace segrank::tune {

bool Config::operator==(const Config& o) const { return config_key(*this) == config_key(o); }

std::string config_key(const Config& c) {
    std::string key;
    if (!c.tile.empty()) {
        key.push_back('t');
        for (float v : c.tile) {
            const float w = v == 0.0f ? 0.0f : v;  // -0 and 0 are the same bound
            char b[sizeof(float)];
            std::memcpy(b, &w, sizeof(float));
            key.append(b, sizeof(float));
        }
    } else {
        key.push_back('l');
        key.append(reinterpret_cast<const char*>(c.layout.data()), c.layout.size());
    }
    return key;
}

namespace {
void append_dims(std::ostringstream& os, const int8_t* slots) {
    os << '{';
    for (int d = 0; d < 6 && slots[d] >= 0; ++d) os << (d ? "," : "") << static_cast<int>(slots[d]);
    os << '}';
}
void append_bounds(std::ostringstream& os, const float* block) {
    os << '[';
    for (int d = 0; d < 6 && block[d] != 0.0f; ++d) os << (d ? "," : "") << block[d];
    os << ']';
}
}  // namespace

std::string describe(const Config& c) {
    std::ostringstream os;
    if (c.task() == Task::kTile) {
        if (c.tile.size() != static_cast<size_t>(kTileConfigDim)) {
            os << "tile row of " << c.tile.size() << " values";
            return os.str();
        }
        os << "kernel ";
        append_bounds(os, c.tile.data());
        os << " output ";
        append_bounds(os, c.tile.data() + 8);
        os << " input ";
        append_bounds(os, c.tile.data() + 16);
        return os.str();
    }
    const size_t nodes = c.layout.size() / kLayoutConfigDim;
    bool any = false;
    for (size_t k = 0; k < nodes; ++k) {
        const int8_t* s = c.layout.data() + k * kLayoutConfigDim;
        bool all_default = true;
        for (int i = 0; i < kLayoutConfigDim; ++i) all_default = all_default && s[i] == -1;
        if (all_default) continue;
        os << (any ? "; " : "") << "node " << k << ": out ";
        append_dims(os, s);
        os << " in ";
        append_dims(os, s + 6);
        os << " kernel ";
        append_dims(os, s + 12);
        any = true;
    }
    if (!any) os << "default";
    if (c.layout.size() % kLayoutConfigDim != 0) os << " (+" << c.layout.size() % 18 << " values)";
    return os.str();
}

int64_t TuneGraph::num_recorded() const {
    return task == Task::kTile ? tile.num_configs() : layout.num_configs();
}

Config TuneGraph::recorded_config(int64_t j) const {
    SEGRANK_CHECK(j >= 0 && j < num_recorded(), "tune: recorded config ", j, " of ", name,
                  " out of range 0..", num_recorded() - 1);
    Config c;
    if (task == Task::kTile) {
        const float* row = tile.config_feat.data() + j * kTileConfigDim;
        c.tile.assign(row, row + kTileConfigDim);
    } else {
        const size_t len = static_cast<size_t>(layout.num_config_nodes()) * kLayoutConfigDim;
        const auto* row = layout.node_config_feat.data() + static_cast<size_t>(j) * len;
        c.layout.assign(row, row + len);
    }
    return c;
}

int64_t TuneGraph::recorded_runtime_ns(int64_t j) const {
    SEGRANK_CHECK(j >= 0 && j < num_recorded(), "tune: recorded config ", j, " of ", name,
                  " out of range 0..", num_recorded() - 1);
    const auto i = static_cast<size_t>(j);
    return task == Task::kTile ? tile.config_runtime[i] : layout.config_runtime[i];
}

TuneGraph load_tune_graph(const std::filesystem::path& path, Task task, LabelPolicy labels) {
    TuneGraph g = task == Task::kTile ? tune_graph(load_tile_npz(path, labels))
                                      : tune_graph(load_layout_npz(path, labels));
    g.path = path;
    return g;
}

TuneGraph tune_graph(TileGraph g) {
    TuneGraph t;
    t.task = Task::kTile;
    t.name = g.name;
    t.path = g.source;
    t.tile = std::move(g);
    return t;
}

TuneGraph tune_graph(LayoutGraph g) {
    TuneGraph t;
    t.task = Task::kLayout;
    t.name = g.name;
    t.path = g.source;
    t.layout = std::move(g);
    return t;
}

}  // namespace segrank::tune
