// Model-free baselines: simulated annealing over SearchSpace::neighbor and uniform random search,
// both driven only by measurements.
#include "tune/search.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <unordered_set>

#include "gnn/core/check.h"

namespace segrank::tune {

namespace {

void record(SearchTrace& trace, Config c, const Measurement& m) {
    const double prev = trace.best_so_far.empty() ? INFINITY : trace.best_so_far.back();
    if (m.ok() && *m.runtime_ns < prev) trace.best = static_cast<int64_t>(trace.trials.size());
    trace.best_so_far.push_back(m.ok() ? std::min(prev, *m.runtime_ns) : prev);
    trace.trials.push_back({std::move(c), m.runtime_ns});
}

std::vector<Measurement> measure_checked(Measurer& measurer, std::span<const Config> batch) {
    auto out = measurer.measure(batch);
    SEGRANK_ASSERT(out.size() == batch.size());
    return out;
}

}  // namespace

int64_t RoundSchedule::size(int64_t measured) const {
    SEGRANK_CHECK(cap >= 1 && measured >= 0, "round schedule: cap ", cap, ", measured ", measured,
                  ", expected cap >= 1 and measured >= 0");
    if (!grow) return cap;
    const int64_t tenth = measured / kGrowDivisor + (measured % kGrowDivisor != 0);
    return std::clamp<int64_t>(tenth, std::min<int64_t>(2, cap), cap);
}

int64_t RoundSchedule::explore(int64_t k, int64_t measured, int64_t explored) const {
    SEGRANK_CHECK(k >= 1 && explored >= 0 && explored <= measured, "round schedule: round of ", k,
                  ", ", explored, " explored of ", measured,
                  " measured, expected k >= 1 and 0 <= explored <= measured");
    if (k < 2) return 0;
    if (grow && kExploreDivisor * explored >= measured) return 0;
    return std::max<int64_t>(1, k / kExploreDivisor);
}

std::string RoundSchedule::spelling() const {
    return grow ? "grow:" + std::to_string(cap) : std::to_string(cap);
}

RoundSchedule parse_round_schedule(const std::string& text, const std::string& option) {
    const auto count = [](const std::string& t, int64_t& v) {
        const char* end = t.data() + t.size();
        const auto r = std::from_chars(t.data(), end, v);
        return !t.empty() && r.ec == std::errc() && r.ptr == end;
    };
    int64_t v = 0;
    const std::string grow = "grow";
    if (text == grow) return RoundSchedule::growing(RoundSchedule::kGrowCap);
    if (text.rfind(grow + ":", 0) == 0 && count(text.substr(grow.size() + 1), v) && v >= 2)
        return RoundSchedule::growing(v);
    if (count(text, v) && v >= 1) return RoundSchedule::fixed(v);
    throw Error(str(option,
                    ": expected a count of configs per round >= 1, grow (rounds growing "
                    "with the measurements, up to ",
                    RoundSchedule::kGrowCap, ") or grow:CAP (CAP >= 2), got '", text, "'"));
}

SearchTrace simulated_annealing(const SearchSpace& space, Measurer& measurer,
                                const AnnealOptions& opt) {
    SEGRANK_CHECK(opt.budget >= 1, "anneal: budget ", opt.budget, ", expected >= 1");
    SEGRANK_CHECK(opt.batch.cap >= 1, "anneal: batch ", opt.batch.cap, ", expected >= 1");
    SEGRANK_CHECK(std::isfinite(opt.t_start) && std::isfinite(opt.t_end) && opt.t_end > 0 &&
                      opt.t_start >= opt.t_end,
                  "anneal: temperatures t_start ", opt.t_start, ", t_end ", opt.t_end,
                  ": expected t_start >= t_end > 0");
    Rng rng = Rng::derive(opt.seed, 0, 0, "tune-anneal");
    SearchTrace trace;
    std::unordered_set<std::string> seen;

    Config current = space.default_config();
    seen.insert(config_key(current));
    {
        const auto m = measure_checked(measurer, std::span<const Config>(&current, 1));
        record(trace, current, m[0]);
    }
    std::optional<double> cur_ns = trace.trials.back().runtime_ns;
    const double ratio = opt.t_end / opt.t_start;
    const double steps = std::max<double>(1.0, static_cast<double>(opt.budget - 1));

    while (static_cast<int64_t>(trace.trials.size()) < opt.budget) {
        // A batch of distinct unmeasured proposals around the current config.
        std::vector<Config> batch;
        const auto done = static_cast<int64_t>(trace.trials.size());
        const int64_t want = std::min<int64_t>(opt.batch.size(done), opt.budget - done);
        for (int64_t b = 0; b < want; ++b) {
            bool found = false;
            for (int tries = 0; tries < 200 && !found; ++tries) {
                // A failed start (no successful current yet) or a stuck neighbourhood restarts
                // from a random config.
                Config c = tries < 100 ? space.neighbor(current, rng) : space.random_config(rng);
                if (!space.feasible(c) || !seen.insert(config_key(c)).second) continue;
                batch.push_back(std::move(c));
                found = true;
            }
            if (!found) break;
        }
        if (batch.empty()) break;  // no unmeasured config found: the space is exhausted
        const auto ms = measure_checked(measurer, batch);
        for (size_t i = 0; i < batch.size(); ++i) {
            const double frac = static_cast<double>(trace.trials.size() - 1) / steps;
            const double temp = opt.t_start * std::pow(ratio, frac);
            const Measurement& m = ms[i];
            bool accept = false;
            if (m.ok()) {
                if (!cur_ns) {
                    accept = true;
                } else {
                    const double delta = std::log(*m.runtime_ns) - std::log(*cur_ns);
                    accept = delta <= 0 || rng.uniform() < std::exp(-delta / temp);
                }
            }
            if (accept) {
                current = batch[i];
                cur_ns = m.runtime_ns;
            }
            record(trace, std::move(batch[i]), m);
        }
    }
    return trace;
}

SearchTrace random_search(const SearchSpace& space, Measurer& measurer, int64_t budget,
                          uint64_t seed, RoundSchedule batch) {
    SEGRANK_CHECK(budget >= 1, "random search: budget ", budget, ", expected >= 1");
    SEGRANK_CHECK(batch.cap >= 1, "random search: batch ", batch.cap, ", expected >= 1");
    Rng rng = Rng::derive(seed, 0, 0, "tune-random");
    SearchTrace trace;
    std::unordered_set<std::string> seen;
    std::vector<Config> pending{space.default_config()};
    seen.insert(config_key(pending[0]));
    int64_t misses = 0;
    while (static_cast<int64_t>(trace.trials.size()) < budget) {
        const auto done = static_cast<int64_t>(trace.trials.size());
        const int64_t want = std::min<int64_t>(batch.size(done), budget - done);
        while (static_cast<int64_t>(pending.size()) < want && misses < 1000) {
            Config c = space.random_config(rng);
            if (space.feasible(c) && seen.insert(config_key(c)).second) {
                pending.push_back(std::move(c));
                misses = 0;
            } else {
                ++misses;
            }
        }
        if (pending.empty()) break;
        const auto ms = measure_checked(measurer, pending);
        for (size_t i = 0; i < pending.size(); ++i) record(trace, std::move(pending[i]), ms[i]);
        pending.clear();
    }
    return trace;
}

}  // namespace segrank::tune
