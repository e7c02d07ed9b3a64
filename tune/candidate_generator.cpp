// CandidateGenerator (tune/candidates.h): each round's new, unmeasured candidates of a search
// space, by enumeration of a small space or by moves from the fastest measured configs.
#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "gnn/core/check.h"
#include "tune/candidates.h"

namespace segrank::tune {

CandidateGenerator::CandidateGenerator(SearchSpace space, uint64_t seed, GeneratorOptions options)
    : space_(std::move(space)), seed_(seed), opt_(options) {
    SEGRANK_CHECK(opt_.local_share >= 0 && opt_.mutation_share >= 0 && opt_.crossover_share >= 0 &&
                      opt_.local_share + opt_.mutation_share + opt_.crossover_share <= 1.0 + 1e-9,
                  "tune: generator shares local ", opt_.local_share, ", mutation ",
                  opt_.mutation_share, ", crossover ", opt_.crossover_share,
                  " must be >= 0 and sum to at most 1");
    SEGRANK_CHECK(opt_.parents >= 1, "tune: generator parents = ", opt_.parents, ", expected >= 1");
    SEGRANK_CHECK(opt_.mutation_rate >= 0 && opt_.mutation_rate <= 1,
                  "tune: generator mutation_rate = ", opt_.mutation_rate, ", expected 0..1");
}

std::vector<Config> CandidateGenerator::propose(int64_t n, std::span<const Trial> trials,
                                                int64_t round) const {
    SEGRANK_CHECK(n >= 0, "tune: cannot propose ", n, " candidates");
    std::vector<Config> out;
    if (n == 0) return out;
    std::unordered_set<std::string> seen;
    for (const Trial& t : trials) seen.insert(config_key(t.config));
    const auto take = [&](Config c) {
        if (static_cast<int64_t>(out.size()) >= n || !space_.feasible(c)) return false;
        if (!seen.insert(config_key(c)).second) return false;
        out.push_back(std::move(c));
        return true;
    };

    // A small space is enumerated, so the generator never misses its last unseen configs.
    if (space_.log10_size() <= std::log10(4096.0) + 1e-9) {
        std::vector<Config> unseen;
        std::vector<int32_t> g(static_cast<size_t>(space_.num_genes()), 0);
        for (;;) {
            Config c = space_.decode(g);
            if (!seen.count(config_key(c)) && space_.feasible(c)) unseen.push_back(std::move(c));
            size_t i = 0;
            while (i < g.size() && ++g[i] == space_.num_choices(static_cast<int64_t>(i)))
                g[i++] = 0;
            if (i == g.size()) break;
        }
        if (static_cast<int64_t>(unseen.size()) <= n) {
            for (auto& c : unseen) take(std::move(c));
            return out;
        }
    }

    // Parents: the default, then the fastest successful trials inside the space (ties by order).
    std::vector<size_t> order;
    for (size_t i = 0; i < trials.size(); ++i)
        if (trials[i].runtime_ns && space_.encode(trials[i].config)) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return *trials[a].runtime_ns < *trials[b].runtime_ns;
    });
    std::vector<Config> parents;
    for (size_t i = 0; i < order.size() && static_cast<int64_t>(parents.size()) < opt_.parents; ++i)
        parents.push_back(trials[order[i]].config);
    const Config def = space_.default_config();
    if (std::none_of(parents.begin(), parents.end(), [&](const Config& p) { return p == def; }))
        parents.push_back(def);

    Rng rng = Rng::derive(seed_, static_cast<uint64_t>(round), trials.size(), "tune-propose");
    // Parent i of P with probability decreasing in i (fastest first): floor(P u^2).
    const auto pick = [&]() -> const Config& {
        const double u = rng.uniform();
        return parents[std::min(parents.size() - 1,
                                static_cast<size_t>(static_cast<double>(parents.size()) * u * u))];
    };
    const int64_t quota[3] = {std::llround(static_cast<double>(n) * opt_.local_share),
                              std::llround(static_cast<double>(n) * opt_.mutation_share),
                              std::llround(static_cast<double>(n) * opt_.crossover_share)};
    int64_t attempts = 50 * n + 1000;
    for (int kind = 0; kind < 3; ++kind) {
        int64_t made = 0;
        for (int64_t tries = 0; made < quota[kind] && tries < 20 * quota[kind] + 20 && attempts > 0;
             ++tries, --attempts) {
            Config c;
            if (kind == 0) {
                c = space_.neighbor(pick(), rng);
            } else if (kind == 1) {
                c = space_.mutate(pick(), rng, opt_.mutation_rate);
            } else {
                c = space_.crossover(pick(), pick(), rng);
                if (rng.uniform() < 0.5) c = space_.neighbor(c, rng);
            }
            made += take(std::move(c));
        }
    }
    while (static_cast<int64_t>(out.size()) < n && attempts-- > 0) take(space_.random_config(rng));
    return out;
}

}  // namespace segrank::tune
