// Segment validation and the SegmentBuilder (induced subgraphs with optional halo context).
#include "segments/segment.h"

#include <algorithm>
#include <limits>

#include "gnn/core/check.h"

namespace segrank {

Segment::Segment(int64_t graph_id, int32_t segment_id, std::vector<int64_t> nodes,
                 int32_t num_pooled, std::vector<int32_t> edge_user,
                 std::vector<int32_t> edge_producer, std::vector<int32_t> config_local,
                 std::vector<int32_t> config_index)
    : graph_id_(graph_id),
      segment_id_(segment_id),
      num_pooled_(num_pooled),
      nodes_(std::move(nodes)),
      edge_user_(std::move(edge_user)),
      edge_producer_(std::move(edge_producer)),
      config_local_(std::move(config_local)),
      config_index_(std::move(config_index)) {
    const std::string where = str("segment ", segment_id, " of graph ", graph_id);
    SEGRANK_CHECK(nodes_.size() <= static_cast<size_t>(std::numeric_limits<int32_t>::max()), where,
                  ": ", nodes_.size(), " nodes exceed int32 local ids");
    SEGRANK_CHECK(num_pooled_ >= 1 && num_pooled_ <= num_nodes(), where,
                  ": num_pooled = ", num_pooled_, ", expected 1..", num_nodes());
    SEGRANK_CHECK(config_local_.size() == config_index_.size(), where, ": config_local has ",
                  config_local_.size(), " entries but config_index has ", config_index_.size());
    for (size_t i = 0; i < config_local_.size(); ++i) {
        SEGRANK_CHECK(config_local_[i] >= 0 && config_local_[i] < num_nodes(), where,
                      ": config_local[", i, "] = ", config_local_[i], " outside [0, ", num_nodes(),
                      ")");
        SEGRANK_CHECK(i == 0 || config_local_[i] > config_local_[i - 1], where, ": config_local[",
                      i, "]: expected strictly increasing local ids");
        SEGRANK_CHECK(config_index_[i] >= 0, where, ": config_index[", i, "] = ", config_index_[i],
                      ", expected >= 0");
    }
    SEGRANK_CHECK(edge_user_.size() == edge_producer_.size(), where, ": edge_user has ",
                  edge_user_.size(), " entries but edge_producer has ", edge_producer_.size());
    for (size_t i = 0; i < edge_user_.size(); ++i) {
        SEGRANK_CHECK(edge_user_[i] >= 0 && edge_user_[i] < num_nodes(), where, ": edge_user[", i,
                      "] = ", edge_user_[i], " outside [0, ", num_nodes(), ")");
        SEGRANK_CHECK(edge_producer_[i] >= 0 && edge_producer_[i] < num_nodes(), where,
                      ": edge_producer[", i, "] = ", edge_producer_[i], " outside [0, ",
                      num_nodes(), ")");
    }
    adj_ = build_graph_csr(num_nodes(), edge_user_, edge_producer_);
}

int64_t Segment::memory_bytes() const {
    auto csr_bytes = [](const Csr& c) {
        return static_cast<int64_t>(c.indptr().size() * sizeof(int64_t) +
                                    c.indices().size() * sizeof(int32_t) +
                                    c.inverse_degrees().size() * sizeof(float));
    };
    return static_cast<int64_t>(nodes_.size() * sizeof(int64_t) +
                                (edge_user_.size() + edge_producer_.size() + config_local_.size() +
                                 config_index_.size()) *
                                    sizeof(int32_t)) +
           csr_bytes(adj_.operands) + csr_bytes(adj_.users);
}

SegmentBuilder::SegmentBuilder(const GraphStructure& graph,
                               std::span<const int64_t> node_config_ids, Partition partition,
                               int64_t graph_id, int32_t halo_hops)
    : graph_(graph), partition_(std::move(partition)), graph_id_(graph_id), halo_hops_(halo_hops) {
    const int64_t n = graph.num_nodes();
    const std::string where = str(graph.source.string(), " (", graph.name, ")");
    SEGRANK_CHECK(halo_hops >= 0, "segments.halo_hops: expected >= 0, got ", halo_hops);
    SEGRANK_CHECK(partition_.num_nodes == n, where, ": partition covers ", partition_.num_nodes,
                  " nodes but the graph has ", n);
    SEGRANK_CHECK(graph.edge_index.size() % 2 == 0, where, ": edge_index: expected [m, 2], got ",
                  graph.edge_index.size(), " values");
    const int64_t m = graph.num_edges();
    out_ptr_.assign(static_cast<size_t>(n) + 1, 0);
    in_ptr_.assign(static_cast<size_t>(n) + 1, 0);
    for (int64_t e = 0; e < m; ++e) {
        const int64_t u = graph.edge_index[2 * e], v = graph.edge_index[2 * e + 1];
        SEGRANK_CHECK(u >= 0 && u < n && v >= 0 && v < n, where, ": edge_index[", e, "] = (", u,
                      ", ", v, "): expected node ids in [0, ", n, ")");
        ++out_ptr_[u + 1];
        ++in_ptr_[v + 1];
    }
    for (int64_t i = 0; i < n; ++i) {
        out_ptr_[i + 1] += out_ptr_[i];
        in_ptr_[i + 1] += in_ptr_[i];
    }
    out_eid_.resize(static_cast<size_t>(m));
    in_eid_.resize(static_cast<size_t>(m));
    std::vector<int64_t> fo(out_ptr_.begin(), out_ptr_.end() - 1),
        fi(in_ptr_.begin(), in_ptr_.end() - 1);
    for (int64_t e = 0; e < m; ++e) {
        out_eid_[fo[graph.edge_index[2 * e]]++] = e;
        in_eid_[fi[graph.edge_index[2 * e + 1]]++] = e;
    }
    config_pos_.assign(static_cast<size_t>(n), -1);
    for (size_t i = 0; i < node_config_ids.size(); ++i) {
        const int64_t v = node_config_ids[i];
        SEGRANK_CHECK(v >= 0 && v < n, where, ": node_config_ids[", i, "] = ", v, " outside [0, ",
                      n, ")");
        SEGRANK_CHECK(config_pos_[v] < 0, where, ": node_config_ids[", i, "] = ", v,
                      " is repeated");
        config_pos_[v] = static_cast<int32_t>(i);
    }
    local_of_.assign(static_cast<size_t>(n), -1);
}

Segment SegmentBuilder::build(int32_t s) {
    SEGRANK_CHECK(s >= 0 && s < num_segments(), "segment id ", s, " outside [0, ", num_segments(),
                  ")");
    const auto pooled = partition_.segment(s);
    std::vector<int64_t> nodes(pooled.begin(), pooled.end());
    const auto num_pooled = static_cast<int32_t>(nodes.size());
    for (int32_t i = 0; i < num_pooled; ++i) local_of_[nodes[i]] = i;

    // Halo: breadth-first over edges in both directions; -2 marks "reached, id not yet assigned".
    std::vector<int64_t> frontier(nodes.begin(), nodes.end()), next;
    for (int32_t hop = 0; hop < halo_hops_ && !frontier.empty(); ++hop) {
        next.clear();
        auto visit = [&](int64_t y) {
            if (local_of_[y] == -1) {
                local_of_[y] = -2;
                next.push_back(y);
            }
        };
        for (int64_t x : frontier) {
            for (int64_t k = out_ptr_[x]; k < out_ptr_[x + 1]; ++k)
                visit(graph_.edge_index[2 * out_eid_[k] + 1]);
            for (int64_t k = in_ptr_[x]; k < in_ptr_[x + 1]; ++k)
                visit(graph_.edge_index[2 * in_eid_[k]]);
        }
        nodes.insert(nodes.end(), next.begin(), next.end());
        frontier.swap(next);
    }
    if (nodes.size() > static_cast<size_t>(std::numeric_limits<int32_t>::max())) {
        for (int64_t x : nodes) local_of_[x] = -1;
        throw Error(str("segment ", s, " of graph ", graph_id_, ": ", nodes.size(),
                        " nodes with halo exceed int32 local ids"));
    }
    std::sort(nodes.begin() + num_pooled, nodes.end());
    for (size_t i = static_cast<size_t>(num_pooled); i < nodes.size(); ++i)
        local_of_[nodes[i]] = static_cast<int32_t>(i);

    std::vector<int32_t> eu, ep, cl, ci;
    for (size_t i = 0; i < nodes.size(); ++i) {
        const int64_t x = nodes[i];
        for (int64_t k = out_ptr_[x]; k < out_ptr_[x + 1]; ++k) {
            const int32_t lv = local_of_[graph_.edge_index[2 * out_eid_[k] + 1]];
            if (lv >= 0) {
                eu.push_back(static_cast<int32_t>(i));
                ep.push_back(lv);
            }
        }
        if (config_pos_[x] >= 0) {
            cl.push_back(static_cast<int32_t>(i));
            ci.push_back(config_pos_[x]);
        }
    }
    for (int64_t x : nodes) local_of_[x] = -1;
    return Segment(graph_id_, s, std::move(nodes), num_pooled, std::move(eu), std::move(ep),
                   std::move(cl), std::move(ci));
}

std::vector<Segment> SegmentBuilder::build_all() {
    std::vector<Segment> out;
    out.reserve(static_cast<size_t>(num_segments()));
    for (int32_t s = 0; s < num_segments(); ++s) out.push_back(build(s));
    return out;
}

}  // namespace segrank
