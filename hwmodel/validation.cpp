// Fixture validation of the timing model (docs/hwmodel.md#validation).
#include "hwmodel/validation.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>
#include <tuple>

#include "hwmodel/kernel_cost.h"
#include "hwmodel/module_cost.h"

namespace segrank::hw {

double kendall_tau_b_simple(const std::vector<double>& x, const std::vector<double>& y) {
    const size_t n = std::min(x.size(), y.size());
    if (n < 2) return std::numeric_limits<double>::quiet_NaN();
    double conc = 0, disc = 0, tx = 0, ty = 0, total = 0;
    for (size_t i = 0; i < n; ++i)
        for (size_t j = i + 1; j < n; ++j) {
            const double dx = x[i] - x[j], dy = y[i] - y[j];
            total += 1;
            if (dx == 0) tx += 1;
            if (dy == 0) ty += 1;
            if (dx == 0 || dy == 0) continue;
            ((dx > 0) == (dy > 0) ? conc : disc) += 1;
        }
    const double denom = std::sqrt((total - tx) * (total - ty));
    if (denom == 0) return std::numeric_limits<double>::quiet_NaN();
    return (conc - disc) / denom;
}

double auc(const std::vector<double>& score, const std::vector<bool>& label) {
    double pos = 0, neg = 0, wins = 0;
    for (size_t i = 0; i < score.size(); ++i) {
        if (!label[i]) continue;
        pos += 1;
        for (size_t j = 0; j < score.size(); ++j) {
            if (label[j]) continue;
            if (score[i] > score[j])
                wins += 1;
            else if (score[i] == score[j])
                wins += 0.5;
        }
    }
    for (bool l : label) neg += l ? 0 : 1;
    if (pos == 0 || neg == 0) return std::numeric_limits<double>::quiet_NaN();
    return wins / (pos * neg);
}

std::pair<double, double> ape_stats(const std::vector<double>& predicted,
                                    const std::vector<double>& measured) {
    std::vector<double> ape;
    for (size_t i = 0; i < std::min(predicted.size(), measured.size()); ++i)
        ape.push_back(std::abs(predicted[i] - measured[i]) / measured[i]);
    if (ape.empty()) return {std::numeric_limits<double>::quiet_NaN(), 0.0};
    double sum = 0;
    for (double a : ape) sum += a;
    std::sort(ape.begin(), ape.end());
    const size_t mid = ape.size() / 2;
    const double median = ape.size() % 2 ? ape[mid] : 0.5 * (ape[mid - 1] + ape[mid]);
    return {sum / static_cast<double>(ape.size()), median};
}

std::vector<double> anchored_predictions(const std::vector<double>& predicted,
                                         const std::vector<double>& measured) {
    const auto log_stats = [](const std::vector<double>& v) {
        double mean = 0, var = 0;
        for (double x : v) mean += std::log(x);
        mean /= static_cast<double>(std::max<size_t>(1, v.size()));
        for (double x : v) var += (std::log(x) - mean) * (std::log(x) - mean);
        return std::pair{mean, std::sqrt(var / static_cast<double>(std::max<size_t>(1, v.size())))};
    };
    const auto [pm, ps] = log_stats(predicted);
    const auto [mm, ms] = log_stats(measured);
    std::vector<double> out;
    for (double p : predicted)
        out.push_back(std::exp(mm + ms * (ps > 0 ? (std::log(p) - pm) / ps : 0.0)));
    return out;
}

TileFit fit_tile(const std::vector<hlo::ModuleTuning>& modules, const HwParams& hw,
                 const CostOptions& options) {
    TileFit fit;
    double tau_sum = 0, slow_sum = 0;
    for (const auto& mt : modules) {
        if (!mt.has_module) continue;
        const KernelModel model(mt.module, hw, options);
        TileKernelFit k;
        k.name = mt.module.name;
        std::vector<double> pred, meas;
        std::set<double> distinct;
        for (const auto& run : mt.runs) {
            const Breakdown b = model.evaluate(run.tile);
            if (run.error) {
                ++k.error_runs;
                if (b.invalid) ++k.error_runs_predicted_invalid;
            }
            if (run.error || run.compute_time_ns <= 1) continue;
            pred.push_back(b.total_ns);
            meas.push_back(static_cast<double>(run.compute_time_ns));
            distinct.insert(b.total_ns);
            if (run.is_default && k.default_measured_ns == 0) {
                k.default_predicted_ns = b.total_ns;
                k.default_measured_ns = static_cast<double>(run.compute_time_ns);
            }
        }
        k.runs = static_cast<int64_t>(pred.size());
        k.distinct_predictions = static_cast<int64_t>(distinct.size());
        k.kendall_tau_b = kendall_tau_b_simple(pred, meas);
        if (!pred.empty()) {
            const size_t best =
                static_cast<size_t>(std::min_element(pred.begin(), pred.end()) - pred.begin());
            const double min_meas = *std::min_element(meas.begin(), meas.end());
            k.top1_slowdown = meas[best] / min_meas - 1;
        }
        if (!pred.empty()) {
            std::tie(k.mape, k.median_ape) = ape_stats(pred, meas);
            std::tie(k.anchored_mape, k.anchored_median_ape) =
                ape_stats(anchored_predictions(pred, meas), meas);
            if (fit.regressed_kernels++ == 0)
                fit.mean_mape = fit.mean_median_ape = fit.mean_anchored_mape =
                    fit.mean_anchored_median_ape = 0;
            fit.mean_mape += k.mape;
            fit.mean_median_ape += k.median_ape;
            fit.mean_anchored_mape += k.anchored_mape;
            fit.mean_anchored_median_ape += k.anchored_median_ape;
        }
        if (k.runs >= 3 && k.distinct_predictions >= 2) {
            ++fit.ranked_kernels;
            tau_sum += std::isnan(k.kendall_tau_b) ? 0 : k.kendall_tau_b;
            slow_sum += k.top1_slowdown;
        }
        fit.kernels.push_back(std::move(k));
    }
    if (fit.regressed_kernels > 0) {
        const auto n = static_cast<double>(fit.regressed_kernels);
        fit.mean_mape /= n;
        fit.mean_median_ape /= n;
        fit.mean_anchored_mape /= n;
        fit.mean_anchored_median_ape /= n;
    }
    if (fit.ranked_kernels > 0) {
        fit.mean_tau = tau_sum / static_cast<double>(fit.ranked_kernels);
        fit.mean_top1_slowdown = slow_sum / static_cast<double>(fit.ranked_kernels);
    }
    return fit;
}

LayoutFit fit_layout(const hlo::ModuleTuning& mt, const HwParams& hw, const CostOptions& options) {
    LayoutFit fit;
    std::vector<int64_t> nodes(mt.config_index_to_node.begin(), mt.config_index_to_node.end());
    LayoutModel model(mt.module, nodes, hw, options);
    std::vector<double> pred, meas;
    std::set<double> distinct;
    for (const auto& run : mt.runs) {
        if (run.kind != Task::kLayout || run.error || !run.has_profile) continue;
        const double p = model.evaluate(run.layout).total_ns;
        pred.push_back(p);
        meas.push_back(static_cast<double>(run.compute_time_ns));
        distinct.insert(p);
        if (run.is_default && fit.default_measured_ns == 0) {
            fit.default_predicted_ns = p;
            fit.default_measured_ns = static_cast<double>(run.compute_time_ns);
        }
    }
    fit.runs = static_cast<int64_t>(pred.size());
    fit.distinct_predictions = static_cast<int64_t>(distinct.size());
    fit.kendall_tau_b = kendall_tau_b_simple(pred, meas);
    if (!meas.empty()) {
        const auto [lo, hi] = std::minmax_element(meas.begin(), meas.end());
        fit.slow_threshold_ns = *lo + (*hi - *lo) * 2.0 / 3.0;
        std::vector<bool> slow;
        for (double m : meas) slow.push_back(m > fit.slow_threshold_ns);
        fit.auc_slow = auc(pred, slow);
    }
    return fit;
}

std::string validation_report(const std::vector<hlo::ModuleTuning>& tile_modules,
                              const std::vector<hlo::ModuleTuning>& layout_modules,
                              const HwParams& hw) {
    std::ostringstream os;
    os.setf(std::ios::fixed);
    os.precision(3);
    struct Variant {
        const char* name;
        CostOptions opt;
    };
    std::vector<Variant> variants = {{"full model", {}}};
    variants.push_back({"no padding", {false, true, true, true}});
    variants.push_back({"no per-step cost", {true, false, true, true}});
    variants.push_back({"no copies", {true, true, false, true}});
    variants.push_back({"no trip counts", {true, true, true, false}});
    if (!tile_modules.empty()) {
        const TileFit full = fit_tile(tile_modules, hw);
        os << "Tile kernels (" << hw.name << "): per kernel\n\n"
           << "| kernel | runs | tau-b | top-1 slowdown | default predicted us | measured us | "
              "ratio | MAPE | median APE | anchored MAPE | anchored median APE |\n"
           << "|---|---|---|---|---|---|---|---|---|---|---|\n";
        for (const auto& k : full.kernels)
            os << "| " << k.name << " | " << k.runs << " | " << k.kendall_tau_b << " | "
               << 100 * k.top1_slowdown << " % | " << k.default_predicted_ns / 1e3 << " | "
               << k.default_measured_ns / 1e3 << " | "
               << k.default_predicted_ns / std::max(1.0, k.default_measured_ns) << " | "
               << 100 * k.mape << " % | " << 100 * k.median_ape << " % | " << 100 * k.anchored_mape
               << " % | " << 100 * k.anchored_median_ape << " % |\n";
        os << "\nKernel-runtime regression over " << full.regressed_kernels
           << " kernels (means of the per-kernel values; docs/metrics.md#runtime-regression): "
              "MAPE "
           << 100 * full.mean_mape << " %, median APE " << 100 * full.mean_median_ape
           << " %; anchored MAPE " << 100 * full.mean_anchored_mape << " %, median APE "
           << 100 * full.mean_anchored_median_ape << " %\n\n";
    }
    os << "| variant | tile mean tau-b (kernels) | tile mean top-1 slowdown | layout tau-b | "
          "layout AUC slow | layout default predicted ms |\n"
       << "|---|---|---|---|---|---|\n";
    for (const auto& v : variants) {
        os << "| " << v.name << " | ";
        if (!tile_modules.empty()) {
            const TileFit f = fit_tile(tile_modules, hw, v.opt);
            os << f.mean_tau << " (" << f.ranked_kernels << ") | " << 100 * f.mean_top1_slowdown
               << " % | ";
        } else {
            os << "- | - | ";
        }
        if (!layout_modules.empty()) {
            const LayoutFit l = fit_layout(layout_modules[0], hw, v.opt);
            os << l.kendall_tau_b << " | " << l.auc_slow << " | " << l.default_predicted_ns / 1e6
               << " |\n";
        } else {
            os << "- | - | - |\n";
        }
    }
    return os.str();
}

}  // namespace segrank::hw
