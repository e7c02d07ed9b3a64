// Shared machinery of the layout cost families (docs/hwmodel.md#cost-families): a module's
// configurable nodes ("sites") with operands, users and multiplicities, the layouts a config gives
// them, and a base class for families that charge each site locally (plus optional pair terms).
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "hwmodel/costs/cost_family.h"
#include "hwmodel/module_cost.h"
#include "hwmodel/module_index.h"

namespace segrank::hw::costs {

/// One configurable node with its neighbourhood in its computation.
struct Site {
    const hlo::Instruction* ins = nullptr;
    size_t computation = 0;
    double multiplicity = 1;                        ///< executions per module run
    std::vector<const hlo::Instruction*> operands;  ///< in operand order
    std::vector<const hlo::Instruction*> users;     ///< distinct users, module order
};

/// The layouts one config gives a site.
struct SiteLayout {
    hlo::Shape out;                    ///< output shape under the config (its own when unset)
    bool out_set = false;              ///< output tensor set and differs from the node's own layout
    std::vector<hlo::Shape> operands;  ///< per operand: the layout the node reads it in
    std::vector<int> slot;             ///< per operand: layout tensor applied (0 none, 1, 2)
    /// Operand i is read in another layout than its producer writes.
    bool operand_changed(size_t i, const Site& s) const;
};

/// True when a and b (arrays) have the same effective minor_to_major.
bool same_layout(const hlo::Shape& a, const hlo::Shape& b);

/// Not free, not control flow: an instruction that launches work (docs/hwmodel.md#per-op-costs).
bool launches_work(const hlo::Instruction& ins);

/// op_work of `ins` on (out, operands); a fusion adds its fused body's work on its own shapes.
OpWork work_of(const ModuleIndex& idx, const hlo::Instruction& ins, const hlo::Shape& out,
               const std::vector<const hlo::Shape*>& operands, const HwParams& hw,
               const CostOptions& opt);

/// A module analysed for the layout families.
class SiteModule {
public:
    /// Throws segrank::Error when the module is malformed or a node index is out of range.
    SiteModule(const hlo::HloModule& module, const std::vector<int64_t>& config_nodes,
               const HwParams& hw, const CostOptions& options);
    SiteModule(const SiteModule&) = delete;
    SiteModule& operator=(const SiteModule&) = delete;

    const ModuleIndex& index() const { return idx_; }
    const HwParams& hw() const { return hw_; }
    const CostOptions& options() const { return opt_; }
    size_t num_sites() const { return sites_.size(); }
    const Site& site(size_t k) const { return sites_[k]; }
    /// Site index of instruction `id`, or -1.
    int32_t site_of(int64_t id) const;
    /// Distinct users of instruction `id` in its computation (module order).
    const std::vector<const hlo::Instruction*>& users(int64_t id) const;
    /// Executions per module run of computation c: 1 for the entry, trip count x caller for while
    /// bodies and conditions, the caller's for call / conditional branches; 0 for computations
    /// only reached through fusion / reduce / sort (their callers charge them).
    double multiplicity(size_t c) const { return multiplicity_[c]; }
    /// Layouts of site k under the 18 values v (all -1: the defaults). Throws segrank::Error
    /// naming the node when a listed dim cannot be applied.
    SiteLayout resolve(size_t k, const LayoutValues& v) const;

private:
    ModuleIndex idx_;
    HwParams hw_;
    CostOptions opt_;
    std::vector<double> multiplicity_;
    std::vector<Site> sites_;
    std::unordered_map<int64_t, int32_t> site_of_;
    std::unordered_map<int64_t, std::vector<const hlo::Instruction*>> users_;
};

/// A family whose runtime is base + sum_k multiplicity_k x (site_ns(k, v_k) - site_ns(k,
/// default)) + pair_ns(config) - pair_ns(default). Site costs are memoised by the 18 values.
class LocalLayoutCost : public LayoutCostFamily {
public:
    double evaluate_ns(const int8_t* values) override;

protected:
    /// Takes the module analysis; the derived constructor calls init() last.
    LocalLayoutCost(const hlo::HloModule& module, const std::vector<int64_t>& config_nodes,
                    const HwParams& hw, const CostOptions& options);
    /// Computes the base (every work-launching instruction at its own layouts, with
    /// multiplicities) and each site's default cost.
    void init();
    /// Cost (ns) of one work-launching instruction at its own layouts, one execution.
    virtual double instruction_ns(const hlo::Instruction& ins) const = 0;
    /// Cost (ns) of site k and what its layouts change around it, one execution.
    virtual double site_ns(size_t k, const SiteLayout& l) const = 0;
    /// Cost (ns, with multiplicities) of interactions between sites; `layouts` [nc].
    virtual double pair_ns(const std::vector<const SiteLayout*>& /*layouts*/) const { return 0; }
    virtual bool has_pairs() const { return false; }

    SiteModule m_;

private:
    struct Entry {
        double ns = 0;
        SiteLayout layout;
    };
    const Entry& entry(size_t k, const LayoutValues& v);
    double base_ns_ = 0;
    double default_pairs_ = 0;
    std::vector<Entry> default_;
    std::vector<std::unordered_map<std::string, Entry>> memo_;
    int64_t memo_size_ = 0;
};

}  // namespace segrank::hw::costs
