// One timed mode of `segrank bench` (cli/bench_modes.h).
#include "cli/bench_modes.h"

#include <sys/resource.h>

#include <algorithm>
#include <iostream>
#include <sstream>
#include <vector>

#include "gnn/ops/matmul.h"
#include "util/median.h"
#include "util/rss.h"

namespace segrank::bench {
namespace {

// Minor page faults of this process so far (getrusage).
long minor_faults() {
    rusage u{};
    getrusage(RUSAGE_SELF, &u);
    return u.ru_minflt;
}

// Op timing on for the lifetime of the guard (also when a step throws).
struct OpTimingOn {
    OpTimingOn() { set_op_timing(true); }
    ~OpTimingOn() { set_op_timing(false); }
    OpTimingOn(const OpTimingOn&) = delete;
    OpTimingOn& operator=(const OpTimingOn&) = delete;
};

// The per-step samples of a TimeSplit.
struct SplitSamples {
    std::array<std::vector<double>, kNumOpCategories> category;
    std::vector<double> other, scopes;

    // Adds the counters of one step of `step_s` seconds.
    void add(const OpTimes& t, double step_s) {
        double sum = 0, calls = 0;
        for (int c = 0; c < kNumOpCategories; ++c) {
            const double s = static_cast<double>(t[static_cast<size_t>(c)].ns) * 1e-9;
            category[static_cast<size_t>(c)].push_back(s);
            sum += s;
            calls += static_cast<double>(t[static_cast<size_t>(c)].calls);
        }
        other.push_back(std::max(0.0, step_s - sum));
        scopes.push_back(calls);
    }
    TimeSplit medians() const {
        TimeSplit s;
        for (int c = 0; c < kNumOpCategories; ++c)
            s.median_s[static_cast<size_t>(c)] = median(category[static_cast<size_t>(c)]);
        s.median_other_s = median(other);
        s.median_scopes = median(scopes);
        return s;
    }
};

// {category: value, ..., "other": value} for the values of each category and of "other".
Json by_category(const std::array<double, kNumOpCategories>& v, double other) {
    Json j = Json::object();
    for (const auto& e : enum_names(OpCategory{}))
        j[std::string(e.name)] = v[static_cast<size_t>(e.value)];
    j["other"] = other;
    return j;
}

}  // namespace

Json time_split_json(const ModeResult& r) {
    const TimeSplit& s = r.split;
    const double step = r.median_step_s;
    std::array<double, kNumOpCategories> frac{};
    for (int c = 0; c < kNumOpCategories; ++c)
        frac[static_cast<size_t>(c)] = step > 0 ? s.median_s[static_cast<size_t>(c)] / step : 0.0;
    return Json{{"seconds_per_step", by_category(s.median_s, s.median_other_s)},
                {"fraction_of_step", by_category(frac, step > 0 ? s.median_other_s / step : 0.0)},
                {"scopes_per_step", s.median_scopes}};
}

std::string time_split_text(const ModeResult& r) {
    const double step = r.median_step_s;
    std::ostringstream o;
    o.setf(std::ios::fixed);
    o.precision(1);
    auto pct = [&](double s) { return step > 0 ? 100.0 * s / step : 0.0; };
    for (const auto& e : enum_names(OpCategory{}))
        o << e.name << " " << pct(r.split.median_s[static_cast<size_t>(e.value)]) << " %, ";
    o << "other " << pct(r.split.median_other_s) << " %";
    return o.str();
}

ModeResult run_mode(const bench::BenchGraph& g, const ModelConfig& mc, bool segments, int64_t k,
                    int warmup, int steps, uint64_t seed) {
    release_cached_tensor_memory();  // each mode starts without the previous mode's cached blocks
    reset_peak_rss();
    Model model(mc);
    model.params().initialize(seed);
    AdamW opt(model.params(), AdamWConfig{});
    Rng rng = Rng::derive(seed, 0, 0, "bench");
    std::vector<double> total, fresh, stale, optim, faults, flops;
    SplitSamples split;
    ModeResult r;
    const OpTimingOn timing;
    for (int s = 0; s < warmup + steps; ++s) {
        const long f0 = minor_faults();
        reset_matmul_flops();
        reset_op_times();
        const StepTimes t = segments ? bench::segment_step(model, opt, g, k, rng)
                                     : bench::full_graph_step(model, opt, g, k, rng);
        std::cerr << "  " << (segments ? "segments" : "full")
                  << (mc.exploit_independence ? "" : " naive") << " step " << s
                  << (s < warmup ? " (warmup)" : "") << ": " << t.total_s << " s, loss " << t.loss
                  << ", " << minor_faults() - f0 << " page faults\n";
        if (s < warmup) continue;
        faults.push_back(static_cast<double>(minor_faults() - f0));
        flops.push_back(static_cast<double>(matmul_flops()));
        split.add(op_times(), t.total_s);
        total.push_back(t.total_s);
        fresh.push_back(t.fresh_s);
        stale.push_back(t.stale_s);
        optim.push_back(t.optimizer_s);
        r.stale_forwards = t.stale_forwards;
        r.skipped_segments = t.skipped_segments;
        r.final_loss = t.loss;
    }
    r.median_step_s = median(total);
    r.median_fresh_s = median(fresh);
    r.median_stale_s = median(stale);
    r.median_optimizer_s = median(optim);
    r.median_page_faults = median(faults);
    r.median_matmul_flops = median(flops);
    r.split = split.medians();
    r.peak_rss_mb = peak_rss_mb();
    return r;
}

}  // namespace segrank::bench
