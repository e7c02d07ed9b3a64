// A whole HLO module under a per-node layout configuration
// (docs/hwmodel.md#modules-under-a-layout-config): layout resolution, inserted copies, approximate
// fusion into kernels, control flow (while = trip count x (body + condition), conditional = max
// branch, call = inline) and incremental re-evaluation.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "data/hlo/module.h"
#include "hwmodel/breakdown.h"
#include "hwmodel/hardware.h"
#include "hwmodel/module_index.h"
#include "hwmodel/op_cost.h"

namespace segrank::hw {

/// One kernel (approximate fusion cluster) of the module, for the explain table.
struct KernelRow {
    std::string name;  ///< the cluster root instruction
    std::string opcode;
    std::string shape;
    std::string computation;
    double multiplicity = 1;  ///< executions per module run (product of enclosing trip counts)
    int32_t members = 1;      ///< instructions fused into this kernel
    Breakdown cost;           ///< one execution
};

/// Layout of one configurable node as 18 values (docs/files.md#layout-config-features): slot t*6+d
/// = dim d of tensor t (0 output, 1 input = operand 0, 2 kernel = operand 1), -1 = unset / compiler
/// default.
using LayoutValues = std::array<int8_t, 18>;

/// A module analysed once; evaluate() then costs a layout configuration in O(#configurable nodes)
/// (each node's cost is memoised by its 18 values). Not thread-safe (the memo); use one model per
/// thread. The module must outlive the model.
class LayoutModel {
public:
    /// `config_nodes`: node indices (flattened order, docs/files.md#node-order-and-edges) of the
    /// configurable nodes. Throws segrank::Error when the module is malformed or a node index is
    /// out of range.
    LayoutModel(const hlo::HloModule& module, std::vector<int64_t> config_nodes, const HwParams& hw,
                const CostOptions& options = {});

    /// Module time under the compiler-default layouts (every configurable node at -1).
    const Breakdown& default_cost() const { return default_; }

    /// Module time when configurable node k takes `config[k]` (size must equal the number of
    /// configurable nodes; else segrank::Error). total = default + sum_k multiplicity_k x
    /// (cost_k(config_k) - cost_k(default)), exact when no configurable node sits in a conditional.
    Breakdown evaluate(const std::vector<LayoutValues>& config);

    /// Same from a node_config_feat row: values [nc * 18] (int8 -1..5).
    double evaluate_ns(const int8_t* values);

    /// Same from a tpu_graphs run (hlo::Run::layout).
    Breakdown evaluate(const std::vector<hlo::NodeLayoutConfig>& config);

    /// Every kernel of the module under the default layouts (configurable nodes under `config`
    /// when given), with multiplicities.
    std::vector<KernelRow> kernels(const std::vector<LayoutValues>* config = nullptr);

    int64_t num_config_nodes() const { return static_cast<int64_t>(config_nodes_.size()); }
    /// Trip count used for each while instruction (name -> trips), for reports.
    const std::vector<std::pair<std::string, double>>& trip_counts() const { return trips_; }

private:
    // An approximate fusion cluster: a root that materializes its output in HBM plus the
    // elementwise producers fused into it (docs/hwmodel.md#modules-under-a-layout-config).
    struct Cluster {
        const hlo::Instruction* root = nullptr;
        std::vector<const hlo::Instruction*> members;  // root first
        std::unordered_set<int64_t> ids;
    };
    Breakdown cluster_cost(const Cluster& c, const hlo::Instruction* configured,
                           const LayoutValues* values) const;
    Breakdown computation_cost(size_t comp);
    const Breakdown& node_delta(size_t k, const LayoutValues& v);

    ModuleIndex idx_;
    HwParams hw_;
    CostOptions opt_;
    std::vector<int64_t> config_nodes_;
    std::vector<std::vector<Cluster>> clusters_;           // per computation
    std::vector<double> multiplicity_;                     // per computation
    std::vector<std::pair<size_t, size_t>> node_cluster_;  // configurable node -> (comp, cluster)
    std::vector<Breakdown> node_default_;                  // cluster cost of each configurable node
    std::vector<std::unordered_map<std::string, Breakdown>> memo_;
    std::vector<std::pair<std::string, double>> trips_;
    std::unordered_map<size_t, Breakdown> comp_memo_;
    Breakdown default_;
};

/// The dims tensor t (0 output, 1 input, 2 kernel) of `v` lists: its leading values before the
/// first -1 (empty = unset, the compiler's default).
std::vector<int64_t> layout_dims(const LayoutValues& v, int t);

/// Which operands layout tensors 1 (input) and 2 (kernel) of `v` apply to, as indices into
/// `operands` (-1: none). Modules rebuilt from npz list operands by ascending node id, not in
/// operand order (module_from_graph), so a dot whose rank-3 operand 0 has the higher id would get
/// operand 0's layout on its rank-2 operand 1. Matched by rank instead: a tensor fits an operand
/// when every dim it lists is a distinct dim of that operand (an unset tensor fits every operand),
/// fully when it lists all of them (the rank equals the count; the real files also hold partial
/// lists such as 2 dims of a rank-3 operand); among the pairs of distinct operands where both
/// fit, the one with the most full fits wins and ties keep id order (tensor 1 -> first operand,
/// tensor 2 -> second). Modules read from protobufs have their true operand order, which fits
/// unless the config is invalid. (0, 1) when no pair fits (relayout then reports the error);
/// fewer than two operands: tensor 1 -> operand 0 (if any), tensor 2 unused.
std::array<int, 2> match_layout_operands(const LayoutValues& v,
                                         const std::vector<const hlo::Shape*>& operands);

/// Converts a NodeLayoutConfig (hlo::Run::layout entry) to the 18 values (-1 = unset); dims beyond
/// 6 per tensor and tensors beyond 3 are ignored, as in the featurizer.
LayoutValues layout_values(const hlo::NodeLayoutConfig& node);

}  // namespace segrank::hw
