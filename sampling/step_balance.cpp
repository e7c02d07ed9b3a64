// Step-cost model of data-parallel training (docs/architecture.md#distribution).
#include "sampling/step_balance.h"

#include <algorithm>
#include <vector>

#include "gnn/core/check.h"

namespace segrank {

Ownership training_ownership(OwnershipMode mode, std::span<const int64_t> visit_costs,
                             std::span<const int64_t> step_costs, int world) {
    return Ownership(mode, mode == OwnershipMode::kPerStep ? step_costs : visit_costs, world);
}

StepBalance predict_step_balance(const BatchSampler& batches, const Ownership& owners,
                                 std::span<const int64_t> costs, int64_t begin, int64_t end) {
    SEGRANK_CHECK(begin >= 0 && end >= begin, "step balance: step range [", begin, ", ", end,
                  ") is empty or negative");
    StepBalance b;
    std::vector<int64_t> totals(static_cast<size_t>(owners.world()));
    for (int64_t step = begin; step < end; ++step) {
        const std::vector<int64_t> members = batches.global_batch(step);
        const std::vector<int32_t> ranks = owners.step_ranks(members);
        std::fill(totals.begin(), totals.end(), int64_t{0});
        int64_t all = 0;
        for (size_t i = 0; i < members.size(); ++i) {
            const int64_t g = members[i];
            SEGRANK_CHECK(g >= 0 && g < static_cast<int64_t>(costs.size()), "step balance: graph ",
                          g, " has no cost (", costs.size(), " costs)");
            totals[static_cast<size_t>(ranks[i])] += costs[static_cast<size_t>(g)];
            all += costs[static_cast<size_t>(g)];
        }
        b.mean_work += static_cast<double>(all) / owners.world();
        b.whole_work += static_cast<double>(all) / owners.world();
        b.max_work += static_cast<double>(*std::max_element(totals.begin(), totals.end()));
        ++b.steps;
    }
    return b;
}

StepBalance predict_sliced_step_balance(const BatchSampler& batches, const Ownership& owners,
                                        std::span<const int64_t> costs,
                                        std::span<const int64_t> positions, int64_t begin,
                                        int64_t end) {
    SEGRANK_CHECK(begin >= 0 && end >= begin, "step balance: step range [", begin, ", ", end,
                  ") is empty or negative");
    StepBalance b;
    std::vector<double> totals(static_cast<size_t>(owners.world()));
    for (int64_t step = begin; step < end; ++step) {
        const std::vector<int64_t> members = batches.global_batch(step);
        std::vector<int64_t> k;
        for (int64_t g : members) {
            SEGRANK_CHECK(g >= 0 && g < static_cast<int64_t>(costs.size()) &&
                              g < static_cast<int64_t>(positions.size()),
                          "step balance: graph ", g, " has no cost (", costs.size(), " costs, ",
                          positions.size(), " config positions)");
            k.push_back(positions[static_cast<size_t>(g)]);
        }
        std::fill(totals.begin(), totals.end(), 0.0);
        double all = 0.0;
        if (owners.world() == 1) {
            for (int64_t g : members) all += static_cast<double>(costs[static_cast<size_t>(g)]);
            totals[0] = all;
        } else {
            const std::vector<StepUnit> units = owners.step_units(members, k);
            std::vector<int64_t> slices(members.size(), 0);
            for (const StepUnit& u : units) ++slices[static_cast<size_t>(u.member)];
            for (const StepUnit& u : units) {
                const auto i = static_cast<size_t>(u.member);
                const double w = static_cast<double>(config_slice_cost(
                    costs[static_cast<size_t>(members[i])], u.end - u.begin, k[i], slices[i]));
                totals[static_cast<size_t>(u.rank)] += w;
                all += w;
            }
        }
        double whole = 0.0;
        for (int64_t g : members) whole += static_cast<double>(costs[static_cast<size_t>(g)]);
        b.whole_work += whole / owners.world();
        b.mean_work += all / owners.world();
        b.max_work += *std::max_element(totals.begin(), totals.end());
        ++b.steps;
    }
    return b;
}

}  // namespace segrank
