// HistoryTable implementation: hash map keyed by packed (graph, config) -> row of S values, an LRU
// list of rows, and byte accounting against the cap.
#include "segments/history_table.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "gnn/core/check.h"

namespace segrank {

namespace {
constexpr int64_t kMaxId = int64_t{1} << 32;  // graph and config ids are packed into 32 bits each
// Per-row bookkeeping beyond the value/step arrays: hash node (+ bucket pointer), LRU list node and
// the two allocation headers. An estimate; it keeps many tiny rows from escaping the cap.
constexpr int64_t kRowOverheadBytes = 128;
}  // namespace

HistoryTable::HistoryTable(int32_t width, int64_t max_bytes)
    : width_(width), max_bytes_(max_bytes) {
    SEGRANK_CHECK(width >= 1, "HistoryTable: value width must be >= 1, got ", width);
    SEGRANK_CHECK(max_bytes >= 0, "segments.history_max_mb: expected >= 0 (0 = unlimited), got ",
                  max_bytes, " bytes");
}

int64_t HistoryTable::bytes_from_mb(double mb) {
    SEGRANK_CHECK(std::isfinite(mb) && mb >= 0, "segments.history_max_mb: expected >= 0, got ", mb);
    return static_cast<int64_t>(mb * 1024.0 * 1024.0);
}

uint64_t HistoryTable::pack(int64_t graph, int64_t config) {
    return (static_cast<uint64_t>(graph) << 32) | static_cast<uint64_t>(config);
}

int64_t HistoryTable::row_bytes(int32_t num_segments) const {
    return static_cast<int64_t>(num_segments) * (static_cast<int64_t>(width_) * 4 + 4) +
           kRowOverheadBytes;
}

void HistoryTable::set_num_segments(int64_t graph, int32_t num_segments) {
    SEGRANK_CHECK(graph >= 0 && graph < kMaxId, "HistoryTable: graph id ", graph,
                  " outside [0, 2^32)");
    SEGRANK_CHECK(num_segments >= 1, "HistoryTable: graph ", graph,
                  ": segment count must be >= 1, got ", num_segments);
    SEGRANK_CHECK(max_bytes_ == 0 || row_bytes(num_segments) <= max_bytes_,
                  "segments.history_max_mb: one (graph, config) row of graph ", graph, " (",
                  num_segments, " segments x ", width_, " floats) needs ", row_bytes(num_segments),
                  " bytes, above the cap of ", max_bytes_, " bytes");
    auto [it, inserted] = graph_segments_.emplace(graph, num_segments);
    SEGRANK_CHECK(inserted || it->second == num_segments, "HistoryTable: graph ", graph,
                  " was declared with ", it->second, " segments, now ", num_segments,
                  " (partition changed?)");
}

std::optional<int32_t> HistoryTable::num_segments(int64_t graph) const {
    auto it = graph_segments_.find(graph);
    if (it == graph_segments_.end()) return std::nullopt;
    return it->second;
}

HistoryTable::Row* HistoryTable::find_row(int64_t graph, int64_t config) {
    if (graph < 0 || graph >= kMaxId || config < 0 || config >= kMaxId) return nullptr;
    auto it = rows_.find(pack(graph, config));
    return it == rows_.end() ? nullptr : &it->second;
}

void HistoryTable::touch(Row& row) { lru_.splice(lru_.begin(), lru_, row.lru); }

void HistoryTable::evict_lru() {
    SEGRANK_ASSERT(!lru_.empty());
    const uint64_t key = lru_.back();
    auto it = rows_.find(key);
    SEGRANK_ASSERT(it != rows_.end());
    bytes_ -= row_bytes(it->second.num_segments);
    entries_ -= it->second.live;
    lru_.pop_back();
    rows_.erase(it);
    ++counters_.evicted_rows;
}

HistoryTable::Row& HistoryTable::get_or_create_row(int64_t graph, int64_t config) {
    auto git = graph_segments_.find(graph);
    SEGRANK_CHECK(git != graph_segments_.end(), "HistoryTable: graph ", graph,
                  " has no declared segment count (call set_num_segments first)");
    SEGRANK_CHECK(config >= 0 && config < kMaxId, "HistoryTable: config index ", config,
                  " outside [0, 2^32)");
    const uint64_t key = pack(graph, config);
    if (auto it = rows_.find(key); it != rows_.end()) {
        touch(it->second);
        return it->second;
    }
    const int32_t s = git->second;
    const int64_t need = row_bytes(s);
    while (max_bytes_ > 0 && bytes_ + need > max_bytes_ && !lru_.empty()) evict_lru();
    Row row;
    row.num_segments = s;
    row.values = std::make_unique<float[]>(static_cast<size_t>(s) * static_cast<size_t>(width_));
    row.steps = std::make_unique<int32_t[]>(static_cast<size_t>(s));
    std::fill_n(row.steps.get(), s, -1);
    lru_.push_front(key);
    row.lru = lru_.begin();
    bytes_ += need;
    return rows_.emplace(key, std::move(row)).first->second;
}

std::optional<HistoryEntry> HistoryTable::lookup(int64_t graph, int64_t config, int32_t segment,
                                                 int64_t now, int64_t max_staleness) {
    Row* row = find_row(graph, config);
    if (row == nullptr || segment < 0 || segment >= row->num_segments) {
        ++counters_.misses;
        return std::nullopt;
    }
    touch(*row);
    const int32_t step = row->steps[segment];
    if (step < 0) {
        ++counters_.misses;
        return std::nullopt;
    }
    if (max_staleness > 0 && now - step > max_staleness) {
        ++counters_.misses;
        ++counters_.stale;
        return std::nullopt;
    }
    ++counters_.hits;
    const float* v = row->values.get() + static_cast<size_t>(segment) * static_cast<size_t>(width_);
    return HistoryEntry{{v, static_cast<size_t>(width_)}, step};
}

bool HistoryTable::contains(int64_t graph, int64_t config, int32_t segment) const {
    if (graph < 0 || graph >= kMaxId || config < 0 || config >= kMaxId) return false;
    auto it = rows_.find(pack(graph, config));
    return it != rows_.end() && segment >= 0 && segment < it->second.num_segments &&
           it->second.steps[segment] >= 0;
}

void HistoryTable::write(int64_t graph, int64_t config, int32_t segment,
                         std::span<const float> value, int64_t step) {
    SEGRANK_CHECK(static_cast<int64_t>(value.size()) == width_, "HistoryTable::write: value has ",
                  value.size(), " floats, expected width ", width_);
    SEGRANK_CHECK(step >= 0 && step <= std::numeric_limits<int32_t>::max(),
                  "HistoryTable::write: step ", step, " outside [0, 2^31)");
    auto git = graph_segments_.find(graph);
    SEGRANK_CHECK(git == graph_segments_.end() || (segment >= 0 && segment < git->second),
                  "HistoryTable::write: segment ", segment, " of graph ", graph, " outside [0, ",
                  git == graph_segments_.end() ? 0 : git->second, ")");
    Row& row = get_or_create_row(graph, config);
    if (row.steps[segment] < 0) {
        ++row.live;
        ++entries_;
    }
    row.steps[segment] = static_cast<int32_t>(step);
    std::memcpy(row.values.get() + static_cast<size_t>(segment) * static_cast<size_t>(width_),
                value.data(), static_cast<size_t>(width_) * sizeof(float));
}

int64_t HistoryTable::gather(int64_t graph, std::span<const int64_t> configs, int32_t segment,
                             int64_t now, int64_t max_staleness, MatrixView out,
                             std::span<uint8_t> found) {
    SEGRANK_CHECK(out.rows == static_cast<int64_t>(configs.size()) && out.cols == width_,
                  "HistoryTable::gather: out is [", out.rows, ", ", out.cols, "], expected [",
                  configs.size(), ", ", width_, "]");
    SEGRANK_CHECK(found.size() == configs.size(), "HistoryTable::gather: found has ", found.size(),
                  " entries, expected ", configs.size());
    int64_t count = 0;
    for (size_t k = 0; k < configs.size(); ++k) {
        float* dst = out.row(static_cast<int64_t>(k));
        if (auto e = lookup(graph, configs[k], segment, now, max_staleness)) {
            std::memcpy(dst, e->value.data(), static_cast<size_t>(width_) * sizeof(float));
            found[k] = 1;
            ++count;
        } else {
            std::fill_n(dst, width_, 0.0f);
            found[k] = 0;
        }
    }
    return count;
}

void HistoryTable::scatter(int64_t graph, std::span<const int64_t> configs, int32_t segment,
                           ConstMatrixView values, int64_t step) {
    SEGRANK_CHECK(values.rows == static_cast<int64_t>(configs.size()) && values.cols == width_,
                  "HistoryTable::scatter: values are [", values.rows, ", ", values.cols,
                  "], expected [", configs.size(), ", ", width_, "]");
    for (size_t k = 0; k < configs.size(); ++k)
        write(graph, configs[k], segment,
              {values.row(static_cast<int64_t>(k)), static_cast<size_t>(width_)}, step);
}

void HistoryTable::clear() {
    rows_.clear();
    lru_.clear();
    graph_segments_.clear();
    bytes_ = 0;
    entries_ = 0;
}

HistoryStats HistoryTable::stats() const {
    HistoryStats s = counters_;
    s.rows = static_cast<int64_t>(rows_.size());
    s.entries = entries_;
    s.bytes = bytes_;
    return s;
}

HistoryArrays HistoryTable::export_arrays(const std::function<bool(int64_t)>& keep_graph,
                                          int64_t written_at) const {
    HistoryArrays a;
    a.width = width_;
    for (const auto& [g, s] : graph_segments_) {
        if (keep_graph && !keep_graph(g)) continue;
        a.graphs.push_back(g);
    }
    std::sort(a.graphs.begin(), a.graphs.end());
    for (int64_t g : a.graphs) a.graph_segments.push_back(graph_segments_.at(g));
    for (auto it = lru_.rbegin(); it != lru_.rend(); ++it) {
        const int64_t graph = static_cast<int64_t>(*it >> 32),
                      config = static_cast<int64_t>(*it & 0xffffffffULL);
        if (keep_graph && !keep_graph(graph)) continue;
        const Row& row = rows_.at(*it);
        for (int32_t s = 0; s < row.num_segments; ++s) {
            if (row.steps[s] < 0 || (written_at >= 0 && row.steps[s] != written_at)) continue;
            a.keys.insert(a.keys.end(), {graph, config, s});
            a.steps.push_back(row.steps[s]);
            const float* v =
                row.values.get() + static_cast<size_t>(s) * static_cast<size_t>(width_);
            a.values.insert(a.values.end(), v, v + width_);
        }
    }
    return a;
}

void HistoryTable::import_arrays(const HistoryArrays& a) {
    SEGRANK_CHECK(a.width == width_, "history import: width ", a.width, ", expected ", width_);
    SEGRANK_CHECK(a.graphs.size() == a.graph_segments.size(), "history import: graphs has ",
                  a.graphs.size(), " entries but graph_segments has ", a.graph_segments.size());
    const size_t e = a.steps.size();
    SEGRANK_CHECK(a.keys.size() == 3 * e, "history import: keys has ", a.keys.size(),
                  " values, expected [", e, ", 3]");
    SEGRANK_CHECK(a.values.size() == e * static_cast<size_t>(width_), "history import: values has ",
                  a.values.size(), " floats, expected [", e, ", ", width_, "]");
    for (size_t i = 0; i < a.graphs.size(); ++i) set_num_segments(a.graphs[i], a.graph_segments[i]);
    for (size_t i = 0; i < e; ++i) {
        const int64_t graph = a.keys[3 * i], config = a.keys[3 * i + 1], seg = a.keys[3 * i + 2];
        SEGRANK_CHECK(graph_segments_.count(graph) != 0, "history import: keys[", i, "] graph ",
                      graph, " is not in graphs");
        SEGRANK_CHECK(seg >= 0 && seg <= std::numeric_limits<int32_t>::max(),
                      "history import: keys[", i, "] segment ", seg, " out of range");
        write(graph, config, static_cast<int32_t>(seg),
              {a.values.data() + i * static_cast<size_t>(width_), static_cast<size_t>(width_)},
              a.steps[i]);
    }
}

}  // namespace segrank
