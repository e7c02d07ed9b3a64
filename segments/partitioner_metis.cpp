// METIS k-way partitioner (docs/gst.md#partitioners). The only translation unit that includes
// metis.h.
#include <metis.h>

#include <algorithm>
#include <limits>

#include "gnn/core/check.h"
#include "segments/partitioner.h"

namespace segrank {

namespace {

const char* metis_status_name(int status) {
    switch (status) {
        case METIS_ERROR_INPUT:
            return "METIS_ERROR_INPUT";
        case METIS_ERROR_MEMORY:
            return "METIS_ERROR_MEMORY";
        case METIS_ERROR:
            return "METIS_ERROR";
        default:
            return "unknown METIS status";
    }
}

// Symmetric adjacency without self loops or duplicate pairs, as METIS's xadj/adjncy.
void symmetrize(int64_t n, std::span<const int64_t> edge_index, std::vector<idx_t>& xadj,
                std::vector<idx_t>& adjncy) {
    SEGRANK_CHECK(edge_index.size() % 2 == 0, "edge_index: expected [m, 2] pairs, got ",
                  edge_index.size(), " values");
    const size_t m = edge_index.size() / 2;
    std::vector<std::pair<int64_t, int64_t>> pairs;
    pairs.reserve(2 * m);
    for (size_t e = 0; e < m; ++e) {
        const int64_t u = edge_index[2 * e], v = edge_index[2 * e + 1];
        SEGRANK_CHECK(u >= 0 && u < n && v >= 0 && v < n, "edge_index[", e, "] = (", u, ", ", v,
                      "): expected node ids in [0, ", n, ")");
        if (u == v) continue;
        pairs.emplace_back(u, v);
        pairs.emplace_back(v, u);
    }
    std::sort(pairs.begin(), pairs.end());
    pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());
    SEGRANK_CHECK(pairs.size() < static_cast<size_t>(std::numeric_limits<idx_t>::max()),
                  "partition_metis: ", pairs.size(),
                  " symmetric edges exceed METIS's 32-bit indices");
    xadj.assign(static_cast<size_t>(n) + 1, 0);
    for (const auto& [u, v] : pairs) ++xadj[static_cast<size_t>(u) + 1];
    for (int64_t i = 0; i < n; ++i) xadj[i + 1] += xadj[i];
    adjncy.resize(pairs.size());
    for (size_t i = 0; i < pairs.size(); ++i) adjncy[i] = static_cast<idx_t>(pairs[i].second);
}

}  // namespace

Partition partition_metis(int64_t num_nodes, std::span<const int64_t> edge_index, int64_t max_nodes,
                          uint64_t seed) {
    SEGRANK_CHECK(num_nodes >= 1, "partition_metis: expected a graph with >= 1 node, got ",
                  num_nodes);
    SEGRANK_CHECK(max_nodes >= 1, "segments.max_nodes: expected >= 1, got ", max_nodes);
    SEGRANK_CHECK(num_nodes < std::numeric_limits<idx_t>::max(), "partition_metis: ", num_nodes,
                  " nodes exceed METIS's 32-bit indices");
    const int64_t nparts = (num_nodes + max_nodes - 1) / max_nodes;

    std::vector<idx_t> part(static_cast<size_t>(num_nodes), 0);
    std::vector<idx_t> xadj, adjncy;
    symmetrize(num_nodes, edge_index, xadj, adjncy);
    if (nparts > 1 && !adjncy.empty()) {
        idx_t nvtxs = static_cast<idx_t>(num_nodes), ncon = 1, np = static_cast<idx_t>(nparts),
              objval = 0;
        idx_t options[METIS_NOPTIONS];
        METIS_SetDefaultOptions(options);
        options[METIS_OPTION_NUMBERING] = 0;
        options[METIS_OPTION_SEED] = static_cast<idx_t>(seed & 0x7fffffffULL);
        const int status =
            METIS_PartGraphKway(&nvtxs, &ncon, xadj.data(), adjncy.data(), nullptr, nullptr,
                                nullptr, &np, nullptr, nullptr, options, &objval, part.data());
        SEGRANK_CHECK(status == METIS_OK, "METIS_PartGraphKway failed with ",
                      metis_status_name(status), " (n = ", num_nodes,
                      ", symmetric edges = ", adjncy.size(), ", nparts = ", nparts, ")");
    } else if (nparts > 1) {
        // No edges: METIS has nothing to cut; contiguous ranges are an optimal (zero-cut) answer.
        for (int64_t v = 0; v < num_nodes; ++v)
            part[v] = static_cast<idx_t>((v * nparts) / num_nodes);
    }

    // Group nodes by part (ascending ids inside each part), then re-split oversized parts.
    std::vector<int64_t> count(static_cast<size_t>(nparts) + 1, 0);
    for (int64_t v = 0; v < num_nodes; ++v) {
        SEGRANK_ASSERT(part[v] >= 0 && part[v] < nparts, "METIS returned part ", part[v]);
        ++count[static_cast<size_t>(part[v]) + 1];
    }
    for (int64_t p = 0; p < nparts; ++p) count[p + 1] += count[p];
    std::vector<int64_t> grouped(static_cast<size_t>(num_nodes));
    std::vector<int64_t> fill(count.begin(), count.end() - 1);
    for (int64_t v = 0; v < num_nodes; ++v) grouped[fill[part[v]]++] = v;

    struct Piece {
        int64_t begin, end;  // range of `grouped`
    };
    std::vector<Piece> pieces;
    for (int64_t p = 0; p < nparts; ++p) {
        const int64_t b = count[p], len = count[p + 1] - count[p];
        if (len == 0) continue;
        const int64_t k = (len + max_nodes - 1) / max_nodes;
        for (int64_t i = 0; i < k; ++i)
            pieces.push_back({b + (i * len) / k, b + ((i + 1) * len) / k});
    }
    std::sort(pieces.begin(), pieces.end(),
              [&](const Piece& a, const Piece& c) { return grouped[a.begin] < grouped[c.begin]; });

    Partition out;
    out.num_nodes = num_nodes;
    out.offsets.reserve(pieces.size() + 1);
    out.offsets.push_back(0);
    out.nodes.reserve(static_cast<size_t>(num_nodes));
    for (const Piece& pc : pieces) {
        out.nodes.insert(out.nodes.end(), grouped.begin() + pc.begin, grouped.begin() + pc.end);
        out.offsets.push_back(static_cast<int64_t>(out.nodes.size()));
    }
    return out;
}

}  // namespace segrank
