// One timed mode of `segrank bench` (cli/bench_modes.h).
#include "cli/bench_modes.h"

#include <sys/resource.h>

#include <iostream>
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

}  // namespace

ModeResult run_mode(const bench::BenchGraph& g, const ModelConfig& mc, bool segments, int64_t k,
                    int warmup, int steps, uint64_t seed) {
    release_cached_tensor_memory();  // each mode starts without the previous mode's cached blocks
    reset_peak_rss();
    Model model(mc);
    model.params().initialize(seed);
    AdamW opt(model.params(), AdamWConfig{});
    Rng rng = Rng::derive(seed, 0, 0, "bench");
    std::vector<double> total, fresh, stale, optim, faults, flops;
    ModeResult r;
    for (int s = 0; s < warmup + steps; ++s) {
        const long f0 = minor_faults();
        reset_matmul_flops();
        const StepTimes t = segments ? bench::segment_step(model, opt, g, k, rng)
                                     : bench::full_graph_step(model, opt, g, k, rng);
        std::cerr << "  " << (segments ? "segments" : "full")
                  << (mc.exploit_independence ? "" : " naive") << " step " << s
                  << (s < warmup ? " (warmup)" : "") << ": " << t.total_s << " s, loss " << t.loss
                  << ", " << minor_faults() - f0 << " page faults\n";
        if (s < warmup) continue;
        faults.push_back(static_cast<double>(minor_faults() - f0));
        flops.push_back(static_cast<double>(matmul_flops()));
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
    r.peak_rss_mb = peak_rss_mb();
    return r;
}

}  // namespace segrank::bench
