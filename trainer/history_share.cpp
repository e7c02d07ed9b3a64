// HistoryTable rows between ranks (docs/architecture.md#distribution).
#include "trainer/history_share.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "gnn/core/check.h"
#include "gnn/core/format.h"

namespace segrank {

std::vector<double> pack_history(const HistoryArrays& a) {
    std::vector<double> v = {static_cast<double>(a.width), static_cast<double>(a.graphs.size()),
                             static_cast<double>(a.num_entries())};
    for (size_t i = 0; i < a.graphs.size(); ++i) {
        v.push_back(static_cast<double>(a.graphs[i]));
        v.push_back(static_cast<double>(a.graph_segments[i]));
    }
    for (int64_t k : a.keys) v.push_back(static_cast<double>(k));
    for (int64_t s : a.steps) v.push_back(static_cast<double>(s));
    for (float x : a.values) v.push_back(static_cast<double>(x));
    return v;
}

HistoryArrays unpack_history(std::span<const double> v) {
    SEGRANK_CHECK(v.size() >= 3, "history shard: ", v.size(), " values, expected a header of 3");
    HistoryArrays a;
    a.width = static_cast<int32_t>(v[0]);
    const auto g = static_cast<size_t>(v[1]);
    const auto e = static_cast<size_t>(v[2]);
    SEGRANK_CHECK(v.size() == 3 + 2 * g + e * (4 + static_cast<size_t>(std::max(a.width, 0))),
                  "history shard: ", v.size(), " values, expected ",
                  3 + 2 * g + e * (4 + static_cast<size_t>(std::max(a.width, 0))), " for ", g,
                  " graphs and ", e, " entries of width ", a.width);
    size_t p = 3;
    for (size_t i = 0; i < g; ++i) {
        a.graphs.push_back(static_cast<int64_t>(v[p++]));
        a.graph_segments.push_back(static_cast<int32_t>(v[p++]));
    }
    for (size_t i = 0; i < 3 * e; ++i) a.keys.push_back(static_cast<int64_t>(v[p++]));
    for (size_t i = 0; i < e; ++i) a.steps.push_back(static_cast<int64_t>(v[p++]));
    for (size_t i = 0; i < e * static_cast<size_t>(a.width); ++i)
        a.values.push_back(static_cast<float>(v[p++]));
    return a;
}

void share_step_history(HistoryTable& table, Communicator& comm, std::span<const int64_t> trained,
                        int64_t step) {
    if (comm.size() == 1) return;
    const auto mine = [&](int64_t g) {
        return std::find(trained.begin(), trained.end(), g) != trained.end();
    };
    const auto shards = comm.gather(pack_history(table.export_arrays(mine, step)), 0);
    // Rank 0 sends [ranks, length of each, every shard] to everyone as bytes.
    std::string bytes;
    if (comm.rank() == 0) {
        std::vector<double> all = {static_cast<double>(shards.size())};
        for (const auto& s : shards) all.push_back(static_cast<double>(s.size()));
        for (const auto& s : shards) all.insert(all.end(), s.begin(), s.end());
        bytes.resize(all.size() * sizeof(double));
        std::memcpy(bytes.data(), all.data(), bytes.size());
    }
    bytes = comm.broadcast(bytes, 0);
    std::vector<double> all(bytes.size() / sizeof(double));
    std::memcpy(all.data(), bytes.data(), all.size() * sizeof(double));
    SEGRANK_ASSERT(!all.empty() && static_cast<int>(all[0]) == comm.size(),
                   "history exchange: expected one shard per rank");
    size_t p = 1 + static_cast<size_t>(comm.size());
    for (int r = 0; r < comm.size(); ++r) {
        const auto n = static_cast<size_t>(all[1 + static_cast<size_t>(r)]);
        if (r != comm.rank()) {
            try {
                table.import_arrays(unpack_history(std::span<const double>(all).subspan(p, n)));
            } catch (const Error& e) {
                throw Error(str("history exchange after step ", step, ", rows of rank ", r, ": ",
                                e.what()));
            }
        }
        p += n;
    }
}

}  // namespace segrank
