// Graph ownership: modulo or longest-processing-time by cost (docs/sampling.md#ownership).
#include "sampling/ownership.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <numeric>
#include <queue>
#include <utility>

#include "gnn/core/check.h"

namespace segrank {

namespace {
constexpr EnumName<OwnershipMode> kOwnershipNames[] = {{OwnershipMode::kModulo, "modulo"},
                                                       {OwnershipMode::kBalanced, "balanced"},
                                                       {OwnershipMode::kPerStep, "per_step"}};
}  // namespace

std::span<const EnumName<OwnershipMode>> enum_names(OwnershipMode) { return kOwnershipNames; }
OwnershipMode parse_ownership_mode(std::string_view name) {
    return parse_enum<OwnershipMode>("ownership mode", name);
}
std::string_view to_string(OwnershipMode mode) { return enum_name(mode); }

int owner_rank(int64_t graph_id, int world) {
    SEGRANK_CHECK(world >= 1, "owner_rank: world size must be >= 1, got ", world);
    SEGRANK_CHECK(graph_id >= 0, "owner_rank: graph id must be >= 0, got ", graph_id);
    return static_cast<int>(graph_id % world);
}

std::vector<int32_t> lpt_assignment(std::span<const int64_t> costs, int world) {
    SEGRANK_CHECK(world >= 1, "ownership: world size must be >= 1, got ", world);
    const size_t n = costs.size();
    for (size_t g = 0; g < n; ++g)
        SEGRANK_CHECK(costs[g] >= 0, "ownership: cost of graph ", g, " is negative (", costs[g],
                      ")");
    std::vector<size_t> order(n);
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return costs[a] != costs[b] ? costs[a] > costs[b] : a < b;
    });
    // Min-heap of (total, rank): the smallest total first, equal totals by the lowest rank.
    using Load = std::pair<int64_t, int32_t>;
    std::priority_queue<Load, std::vector<Load>, std::greater<>> ranks;
    for (int32_t r = 0; r < world; ++r) ranks.push({0, r});
    std::vector<int32_t> owner(n, 0);
    for (size_t g : order) {
        auto [total, r] = ranks.top();
        ranks.pop();
        owner[g] = r;
        ranks.push({total + costs[g], r});
    }
    return owner;
}

Ownership::Ownership(int world) : world_(world) {
    SEGRANK_CHECK(world >= 1, "ownership: world size must be >= 1, got ", world);
}

Ownership::Ownership(OwnershipMode mode, std::span<const int64_t> costs, int world)
    : mode_(mode), world_(world) {
    SEGRANK_CHECK(world >= 1, "ownership: world size must be >= 1, got ", world);
    if (mode == OwnershipMode::kBalanced) owner_ = lpt_assignment(costs, world);
    if (mode == OwnershipMode::kPerStep) {
        for (size_t g = 0; g < costs.size(); ++g)
            SEGRANK_CHECK(costs[g] >= 0, "ownership: cost of graph ", g, " is negative (", costs[g],
                          ")");
        costs_.assign(costs.begin(), costs.end());
    }
}

int Ownership::owner(int64_t graph_id) const {
    if (mode_ != OwnershipMode::kBalanced) return owner_rank(graph_id, world_);
    SEGRANK_CHECK(graph_id >= 0 && graph_id < static_cast<int64_t>(owner_.size()),
                  "ownership: graph id ", graph_id, " outside the ", owner_.size(),
                  " graphs of the balanced assignment");
    return owner_[static_cast<size_t>(graph_id)];
}

std::vector<int32_t> Ownership::step_ranks(std::span<const int64_t> members) const {
    std::vector<int32_t> ranks;
    ranks.reserve(members.size());
    if (mode_ != OwnershipMode::kPerStep) {
        for (int64_t g : members) ranks.push_back(static_cast<int32_t>(owner(g)));
        return ranks;
    }
    return lpt_assignment(member_costs(members), world_);  // ties by batch position
}

std::vector<int64_t> Ownership::member_costs(std::span<const int64_t> members) const {
    std::vector<int64_t> costs;
    costs.reserve(members.size());
    for (int64_t g : members) {
        SEGRANK_CHECK(g >= 0 && g < static_cast<int64_t>(costs_.size()), "ownership: graph id ", g,
                      " outside the ", costs_.size(), " graphs of the per-step assignment");
        costs.push_back(costs_[static_cast<size_t>(g)]);
    }
    return costs;
}

std::vector<StepUnit> Ownership::step_units(std::span<const int64_t> members,
                                            std::span<const int64_t> k) const {
    SEGRANK_CHECK(mode_ == OwnershipMode::kPerStep,
                  "ownership: config slices need per_step ownership, not ", to_string(mode_));
    return config_slice_units(member_costs(members), k, world_);
}

std::vector<int64_t> Ownership::rank_totals(std::span<const int64_t> costs) const {
    std::vector<int64_t> totals(static_cast<size_t>(world_), 0);
    for (size_t g = 0; g < costs.size(); ++g) {
        if (mode_ == OwnershipMode::kBalanced && g >= owner_.size()) break;
        totals[static_cast<size_t>(owner(static_cast<int64_t>(g)))] += costs[g];
    }
    return totals;
}

int64_t config_slice_cost(int64_t cost, int64_t len, int64_t k, int64_t slices) {
    if (slices <= 1 || k <= 0) return cost;
    const long double share =
        kSliceFixedShare + (1.0L - kSliceFixedShare) * static_cast<long double>(len) / k;
    return static_cast<int64_t>(std::llround(static_cast<long double>(cost) * share));
}

std::vector<StepUnit> config_slice_units(std::span<const int64_t> costs, std::span<const int64_t> k,
                                         int world) {
    SEGRANK_CHECK(world >= 1, "config slices: world size must be >= 1, got ", world);
    SEGRANK_CHECK(costs.size() == k.size(), "config slices: ", costs.size(), " costs for ",
                  k.size(), " members");
    long double total = 0;
    for (size_t i = 0; i < costs.size(); ++i) {
        SEGRANK_CHECK(costs[i] >= 0 && k[i] >= 0, "config slices: member ", i, " has cost ",
                      costs[i], " and ", k[i], " configs, expected both >= 0");
        total += static_cast<long double>(costs[i]);
    }
    std::vector<StepUnit> units;
    std::vector<int64_t> unit_costs;
    for (size_t i = 0; i < costs.size(); ++i) {
        int64_t n = 1;
        if (world > 1 && total > 0) {
            const long double share = static_cast<long double>(kSlicesPerRank) * world *
                                      static_cast<long double>(costs[i]) / total;
            n = std::clamp<int64_t>(static_cast<int64_t>(std::ceil(share)), 1,
                                    std::max<int64_t>(1, k[i]));
        }
        const int64_t base = k[i] / n, extra = k[i] % n;
        int64_t begin = 0;
        for (int64_t j = 0; j < n; ++j) {
            const int64_t len = base + (j < extra ? 1 : 0);
            units.push_back({static_cast<int64_t>(i), begin, begin + len, 0});
            unit_costs.push_back(k[i] > 0 ? static_cast<int64_t>(std::llround(
                                                static_cast<long double>(costs[i]) * len / k[i]))
                                          : costs[i]);
            begin += len;
        }
    }
    const std::vector<int32_t> ranks = lpt_assignment(unit_costs, world);
    for (size_t u = 0; u < units.size(); ++u) units[u].rank = ranks[u];
    return units;
}

int64_t train_member_cost(const GraphEntry& e, int64_t configs) {
    const int64_t usable =
        e.configs.empty() ? e.info.num_configs : static_cast<int64_t>(e.configs.size());
    return e.info.num_nodes * std::max<int64_t>(0, std::min(configs, usable));
}

namespace {

// cost(e) of every entry at position e.id, each id 0..N-1 once.
template <typename Cost>
std::vector<int64_t> costs_by_id(const std::vector<GraphEntry>& entries, Cost cost) {
    std::vector<int64_t> costs(entries.size(), -1);
    for (const GraphEntry& e : entries) {
        SEGRANK_CHECK(e.id >= 0 && e.id < static_cast<int64_t>(entries.size()) &&
                          costs[static_cast<size_t>(e.id)] < 0,
                      "ownership: training graph ids must be 0..", entries.size() - 1,
                      " once each; graph '", e.name, "' has id ", e.id);
        costs[static_cast<size_t>(e.id)] = cost(e);
    }
    return costs;
}

}  // namespace

std::vector<int64_t> train_member_costs(const std::vector<GraphEntry>& entries, int64_t configs) {
    return costs_by_id(entries, [&](const GraphEntry& e) { return train_member_cost(e, configs); });
}

int64_t step_config_positions(const GraphEntry& e, int64_t configs, int64_t pool) {
    int64_t usable =
        e.configs.empty() ? e.info.num_configs : static_cast<int64_t>(e.configs.size());
    if (pool > 0) usable = std::min(usable, pool);
    return std::max<int64_t>(0, std::min(configs, usable));
}

std::vector<int64_t> step_config_positions(const std::vector<GraphEntry>& entries, int64_t configs,
                                           int64_t pool) {
    return costs_by_id(
        entries, [&](const GraphEntry& e) { return step_config_positions(e, configs, pool); });
}

int64_t step_member_cost(const GraphEntry& e, int64_t configs, const GstVisitShape& shape) {
    SEGRANK_CHECK(shape.max_nodes >= 0 && shape.fresh >= 0 && shape.stale_forward >= 0.0 &&
                      shape.stale_forward <= 1.0,
                  "ownership: GST visit shape max_nodes ", shape.max_nodes, ", fresh ", shape.fresh,
                  ", stale_forward ", shape.stale_forward,
                  ": expected sizes >= 0 and a share in [0, 1]");
    const int64_t usable =
        e.configs.empty() ? e.info.num_configs : static_cast<int64_t>(e.configs.size());
    const auto k = static_cast<double>(std::max<int64_t>(0, std::min(configs, usable)));
    const int64_t n = std::max<int64_t>(0, e.info.num_nodes);
    const int64_t f = shape.max_nodes == 0 ? n : std::min(n, shape.fresh * shape.max_nodes);
    const double work = k * (kFreshPassCost * static_cast<double>(f) +
                             shape.stale_forward * static_cast<double>(n - f));
    return std::llround(work);
}

std::vector<int64_t> step_member_costs(const std::vector<GraphEntry>& entries, int64_t configs,
                                       const GstVisitShape& shape) {
    return costs_by_id(entries,
                       [&](const GraphEntry& e) { return step_member_cost(e, configs, shape); });
}

}  // namespace segrank
