// Per-graph config sampling without replacement (docs/sampling.md#configs-per-graph).
#include "sampling/config_sampler.h"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "gnn/core/check.h"
#include "gnn/core/rng.h"

namespace segrank {
namespace {

// Moves k uniformly chosen elements of v[begin, end) (without replacement) to v[begin, begin + k).
void partial_shuffle(std::vector<int64_t>& v, size_t begin, size_t end, size_t k, Rng& rng) {
    for (size_t i = 0; i < k; ++i) {
        const size_t j = begin + i + static_cast<size_t>(rng.uniform_int(end - begin - i));
        std::swap(v[begin + i], v[j]);
    }
}

constexpr EnumName<ConfigStrategy> kStrategyNames[] = {{ConfigStrategy::kUniform, "uniform"},
                                                       {ConfigStrategy::kFastBiased, "fast_biased"},
                                                       {ConfigStrategy::kStratified, "stratified"}};

}  // namespace

std::span<const EnumName<ConfigStrategy>> enum_names(ConfigStrategy) { return kStrategyNames; }
ConfigStrategy parse_config_strategy(std::string_view name) {
    return parse_enum<ConfigStrategy>("sampling strategy", name);
}
std::string_view to_string(ConfigStrategy strategy) { return enum_name(strategy); }

ConfigSampler::ConfigSampler(const ConfigSamplerOptions& options, int64_t graph_id,
                             ConfigSet candidates)
    : options_(options), graph_id_(graph_id) {
    SEGRANK_CHECK(options.configs >= 1, "sampling.configs must be >= 1, got ", options.configs);
    SEGRANK_CHECK(options.pool >= 0, "sampling.config_pool must be >= 0, got ", options.pool);
    SEGRANK_CHECK(candidates.indices.size() == candidates.targets.size(), "graph ", graph_id, ": ",
                  candidates.indices.size(), " config indices but ", candidates.targets.size(),
                  " targets");
    SEGRANK_CHECK(!candidates.indices.empty(), "graph ", graph_id, ": no configs to sample from");
    for (size_t i = 0; i < candidates.targets.size(); ++i)
        SEGRANK_CHECK(std::isfinite(candidates.targets[i]), "graph ", graph_id,
                      ": target of config ", candidates.indices[i], " is ", candidates.targets[i],
                      ", expected finite");

    // Canonical order (by file index) first, so the pool does not depend on how candidates came in.
    const size_t n = candidates.indices.size();
    std::vector<int64_t> order(n);
    std::iota(order.begin(), order.end(), int64_t{0});
    std::sort(order.begin(), order.end(),
              [&](int64_t a, int64_t b) { return candidates.indices[a] < candidates.indices[b]; });
    for (size_t i = 1; i < n; ++i)
        SEGRANK_CHECK(candidates.indices[order[i]] != candidates.indices[order[i - 1]], "graph ",
                      graph_id, ": config index ", candidates.indices[order[i]], " appears twice");
    size_t keep = n;
    if (options.pool > 0 && static_cast<size_t>(options.pool) < n) {
        Rng rng = Rng::derive(options.seed, 0, static_cast<uint64_t>(graph_id), "config_pool");
        keep = static_cast<size_t>(options.pool);
        partial_shuffle(order, 0, n, keep, rng);
        order.resize(keep);
    }
    // Rank by (target, index): position in pool_ = rank (0 = fastest).
    std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
        const double ta = candidates.targets[a], tb = candidates.targets[b];
        return ta < tb || (ta == tb && candidates.indices[a] < candidates.indices[b]);
    });
    pool_.indices.reserve(keep);
    pool_.targets.reserve(keep);
    for (int64_t p : order) {
        pool_.indices.push_back(candidates.indices[p]);
        pool_.targets.push_back(candidates.targets[p]);
    }
}

ConfigSet ConfigSampler::sample(int64_t step) const {
    SEGRANK_CHECK(step >= 0, "sampling: step must be >= 0, got ", step);
    const size_t n = pool_.indices.size();
    const size_t k = std::min(static_cast<size_t>(options_.configs), n);
    Rng rng = Rng::derive(options_.seed, static_cast<uint64_t>(step),
                          static_cast<uint64_t>(graph_id_), "configs");
    std::vector<int64_t> ranks(n);
    std::iota(ranks.begin(), ranks.end(), int64_t{0});
    std::vector<int64_t> chosen;  // ranks, in draw order
    switch (options_.strategy) {
        case ConfigStrategy::kUniform:
            partial_shuffle(ranks, 0, n, k, rng);
            chosen.assign(ranks.begin(), ranks.begin() + static_cast<int64_t>(k));
            break;
        case ConfigStrategy::kFastBiased: {
            // Gumbel top-K: argsort of logit + Gumbel noise draws without replacement from softmax.
            std::vector<double> key(n);
            const auto nd = static_cast<double>(n);
            for (size_t r = 0; r < n; ++r)
                key[r] = (nd - static_cast<double>(r)) / nd + rng.gumbel();
            std::partial_sort(ranks.begin(), ranks.begin() + static_cast<int64_t>(k), ranks.end(),
                              [&](int64_t a, int64_t b) {
                                  return key[a] > key[b] || (key[a] == key[b] && a < b);
                              });
            chosen.assign(ranks.begin(), ranks.begin() + static_cast<int64_t>(k));
            break;
        }
        case ConfigStrategy::kStratified: {
            const size_t b = n / 3;
            const size_t per_third = k / 3;  // <= b because k <= n
            // Layout of `ranks`: [0, b) best third, [b, n - b) middle, [n - b, n) worst third.
            partial_shuffle(ranks, 0, b, per_third, rng);
            partial_shuffle(ranks, n - b, n, per_third, rng);
            std::vector<int64_t> rest;
            rest.reserve(n - 2 * per_third);
            for (size_t i = 0; i < n; ++i) {
                const bool taken = i < per_third || (i >= n - b && i < n - b + per_third);
                if (taken) {
                    chosen.push_back(ranks[i]);
                } else {
                    rest.push_back(ranks[i]);
                }
            }
            const size_t more = k - chosen.size();
            partial_shuffle(rest, 0, rest.size(), more, rng);
            chosen.insert(chosen.end(), rest.begin(), rest.begin() + static_cast<int64_t>(more));
            break;
        }
    }
    ConfigSet out;
    out.indices.reserve(k);
    out.targets.reserve(k);
    for (int64_t r : chosen) {
        out.indices.push_back(pool_.indices[r]);
        out.targets.push_back(pool_.targets[r]);
    }
    return out;
}

}  // namespace segrank
