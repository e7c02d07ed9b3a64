// Validation of the timing model on measured tpu_graphs tuning runs (docs/hwmodel.md#validation):
// tile ranking (Kendall tau-b, top-1 slowdown), absolute copy/reshape times, layout ranking and the
// AUC of the slow cluster, plus ablations. Used by tests/hwmodel and `segrank hwmodel validate`.
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <utility>
#include <vector>

#include "data/hlo/module.h"
#include "hwmodel/hardware.h"
#include "hwmodel/op_cost.h"

namespace segrank::hw {

/// Kendall tau-b of x and y ([c] each), O(c^2); NaN when c < 2 or either side is constant.
/// (eval/metrics.h has the O(c log c) version; hwmodel cannot link trainer.)
double kendall_tau_b_simple(const std::vector<double>& x, const std::vector<double>& y);

/// Area under the ROC curve of `score` separating positives (label true) from negatives; ties
/// count 1/2. NaN when a class is empty.
double auc(const std::vector<double>& score, const std::vector<bool>& label);

/// One tile kernel's fit: over kept runs (error == false, compute_time_ns > 1).
struct TileKernelFit {
    std::string name;
    int64_t runs = 0;
    int64_t distinct_predictions = 0;
    double kendall_tau_b = 0;         ///< NaN when predictions or runtimes are constant
    double top1_slowdown = 0;         ///< measured(argmin predicted) / min measured - 1
    double default_predicted_ns = 0;  ///< prediction for the is_default run
    double default_measured_ns = 0;
    int64_t error_runs = 0;  ///< runs flagged error in the file
    int64_t error_runs_predicted_invalid = 0;
    /// Runtime regression over the kept runs (docs/metrics.md#runtime-regression), fractions; NaN
    /// without kept runs. mape / median_ape: the predicted ns against the measured ns as they are;
    /// anchored_*: the log predictions standardized over the kernel's runs and de-standardized with
    /// the mean and std of the measured log runtimes, the anchor `segrank evaluate` gives a learned
    /// model's mse scores (only the shape of the predictions within the kernel counts).
    double mape = std::numeric_limits<double>::quiet_NaN();
    double median_ape = std::numeric_limits<double>::quiet_NaN();
    double anchored_mape = std::numeric_limits<double>::quiet_NaN();
    double anchored_median_ape = std::numeric_limits<double>::quiet_NaN();
};

/// Summary over kernels with >= 3 kept runs and >= 2 distinct predictions.
struct TileFit {
    std::vector<TileKernelFit> kernels;
    double mean_tau = 0;
    double mean_top1_slowdown = 0;
    int64_t ranked_kernels = 0;
    /// Means of the kernels' runtime errors over every kernel with a kept run (NaN if none).
    double mean_mape = std::numeric_limits<double>::quiet_NaN();
    double mean_median_ape = std::numeric_limits<double>::quiet_NaN();
    double mean_anchored_mape = std::numeric_limits<double>::quiet_NaN();
    double mean_anchored_median_ape = std::numeric_limits<double>::quiet_NaN();
    int64_t regressed_kernels = 0;  ///< kernels in those means
};

/// Mean and median absolute percentage error of `predicted` against `measured` ([c] each, c >= 1,
/// measured > 0) as fractions: {MAPE, median APE} (the median of an even count is the mean of the
/// two middle values), as eval/metrics.h's runtime_errors.
std::pair<double, double> ape_stats(const std::vector<double>& predicted,
                                    const std::vector<double>& measured);

/// `predicted` ([c], > 0) moved onto the measured scale in log space: its log values standardized
/// over the c runs (population std; constant -> 0), then mapped through the mean and std of
/// log(measured) ([c], > 0): the anchor of docs/metrics.md#runtime-regression.
std::vector<double> anchored_predictions(const std::vector<double>& predicted,
                                         const std::vector<double>& measured);

/// Evaluates the kernel model on every module of a tile tuning file (op_config runs).
TileFit fit_tile(const std::vector<hlo::ModuleTuning>& modules, const HwParams& hw,
                 const CostOptions& options = {});

/// Layout-module fit over kept runs (error == false, profile present).
struct LayoutFit {
    int64_t runs = 0;
    double kendall_tau_b = 0;
    double auc_slow = 0;  ///< slow cluster = runtime > slow_threshold_ns
    double slow_threshold_ns = 0;
    double default_predicted_ns = 0;
    double default_measured_ns = 0;
    int64_t distinct_predictions = 0;
};

/// Evaluates the layout model on one ModuleTuningData with module_config runs. The slow cluster
/// is the runs slower than min + 2/3 (max - min) (the ~926 ms cluster of the fixture).
LayoutFit fit_layout(const hlo::ModuleTuning& mt, const HwParams& hw,
                     const CostOptions& options = {});

/// Markdown table of the tile/absolute/layout results with the full model and the four ablations
/// (docs/hwmodel.md#validation); either input may be empty.
std::string validation_report(const std::vector<hlo::ModuleTuning>& tile_modules,
                              const std::vector<hlo::ModuleTuning>& layout_modules,
                              const HwParams& hw);

}  // namespace segrank::hw
