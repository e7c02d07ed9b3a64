// Cost family "fusion_aware" (docs/hwmodel.md#fusion-aware): maximal chains of elementwise and
// broadcast ops (same computation, unconfigured) are one kernel that moves only its boundary bytes
// (inputs from outside, outputs read outside or the root) and takes max(VPU, HBM) + one launch.
// A configured layout that differs from what a neighbour writes or reads is absorbed by a fused
// neighbour (it transposes on the XLU while streaming, 2 cycles per vreg, and moves the bytes of
// the new layout); only a non-fusible neighbour needs a copy kernel.
#include <algorithm>
#include <functional>
#include <map>
#include <numeric>
#include <unordered_set>

#include "hwmodel/costs/families.h"
#include "hwmodel/costs/layout_sites.h"
#include "hwmodel/padding.h"

namespace segrank::hw::costs {
namespace {

bool fusible(const hlo::Instruction& ins) {
    const OpClass k = classify_opcode(ins.opcode);
    return (k == OpClass::kElementwise || k == OpClass::kBroadcast) && !ins.shape.is_tuple();
}

class FusionAware : public LocalLayoutCost {
public:
    FusionAware(const hlo::HloModule& module, const std::vector<int64_t>& nodes, const HwParams& hw,
                const CostOptions& opt)
        : LocalLayoutCost(module, nodes, hw, opt) {
        // Union-find of fusible producer -> fusible user edges.
        const auto& mod = m_.index().module();
        std::unordered_map<int64_t, int64_t> parent;
        std::function<int64_t(int64_t)> find = [&](int64_t x) {
            while (parent[x] != x) x = parent[x] = parent[parent[x]];
            return x;
        };
        std::vector<const hlo::Instruction*> members;
        for (size_t c = 0; c < mod.computations.size(); ++c) {
            if (m_.multiplicity(c) <= 0) continue;
            for (const auto& ins : mod.computations[c].instructions)
                if (fusible(ins) && m_.site_of(ins.id) < 0) {
                    parent[ins.id] = ins.id;
                    members.push_back(&ins);
                }
        }
        for (const auto* ins : members)
            for (int64_t op : ins->operand_ids)
                if (parent.count(op)) parent[find(op)] = find(ins->id);
        for (const auto* ins : members) {
            const int64_t g = find(ins->id);
            auto [it, fresh] = group_index_.emplace(g, groups_.size());
            if (fresh) groups_.push_back({});
            group_of_[ins->id] = it->second;
            Group& grp = groups_[it->second];
            grp.members.insert(ins->id);
            grp.vpu_ns +=
                op_work(*ins, ins->shape, m_.index().operand_shapes(*ins), m_.hw(), m_.options())
                    .vpu_ns;
            if (grp.leader < 0 || ins->id < grp.leader) grp.leader = ins->id;
        }
        const bool pad = m_.options().padding;
        for (const auto* ins : members) {
            Group& grp = groups_[group_of_[ins->id]];
            std::unordered_set<int64_t> seen;
            for (int64_t op : ins->operand_ids)
                if (!grp.members.count(op) && seen.insert(op).second && !grp.inputs.count(op)) {
                    grp.inputs.insert(op);
                    grp.bytes +=
                        static_cast<double>(padded_bytes(m_.index().instruction(op).shape, pad));
                }
            bool escapes = m_.users(ins->id).empty();
            for (const auto* u : m_.users(ins->id)) escapes |= !grp.members.count(u->id);
            if (escapes) grp.bytes += static_cast<double>(padded_bytes(ins->shape, pad));
        }
        init();
    }

protected:
    double instruction_ns(const hlo::Instruction& ins) const override {
        if (const auto it = group_of_.find(ins.id); it != group_of_.end()) {
            const Group& g = groups_[it->second];
            return g.leader == ins.id ? group_ns(g, 0, 0) : 0;  // charged once, at its leader
        }
        const auto ops = m_.index().operand_shapes(ins);
        const OpWork w = work_of(m_.index(), ins, ins.shape, ops, m_.hw(), m_.options());
        return kernel_roofline_ns(w, kernel_bytes(ins, ins.shape, ops, m_.options().padding),
                                  m_.hw());
    }

    double site_ns(size_t k, const SiteLayout& l) const override {
        const Site& s = m_.site(k);
        const HwParams& hw = m_.hw();
        const bool pad = m_.options().padding;
        std::vector<const hlo::Shape*> ops;
        for (const auto& o : l.operands) ops.push_back(&o);
        double ns = kernel_roofline_ns(work_of(m_.index(), *s.ins, l.out, ops, hw, m_.options()),
                                       kernel_bytes(*s.ins, l.out, ops, pad), hw);
        std::map<size_t, std::pair<double, double>> delta;  // group -> (vpu ns, bytes)
        auto absorb = [&](size_t g, const hlo::Shape& own, const hlo::Shape& now) {
            auto& d = delta[g];
            d.first += 2 * (vreg_count(own, pad) + vreg_count(now, pad)) / hw.clock_hz * 1e9;
            d.second += static_cast<double>(padded_bytes(now, pad) - padded_bytes(own, pad));
        };
        if (l.out_set) {
            bool copy = s.users.empty();
            std::unordered_set<size_t> fused;
            for (const auto* u : s.users) {
                const auto it = group_of_.find(u->id);
                if (it == group_of_.end())
                    copy = true;
                else
                    fused.insert(it->second);
            }
            for (size_t g : fused) absorb(g, s.ins->shape, l.out);
            if (copy) ns += copy_ns(s.ins->shape, l.out);
        }
        for (size_t i = 0; i < l.operands.size(); ++i) {
            if (!l.operand_changed(i, s)) continue;
            const auto it = group_of_.find(s.operands[i]->id);
            if (it != group_of_.end())
                absorb(it->second, s.operands[i]->shape, l.operands[i]);
            else
                ns += copy_ns(s.operands[i]->shape, l.operands[i]);
        }
        for (const auto& [g, d] : delta)
            ns += group_ns(groups_[g], d.first, d.second) - group_ns(groups_[g], 0, 0);
        return ns;
    }

private:
    struct Group {
        std::unordered_set<int64_t> members, inputs;
        double vpu_ns = 0;
        double bytes = 0;  // boundary bytes
        int64_t leader = -1;
    };

    double group_ns(const Group& g, double extra_vpu, double extra_bytes) const {
        return std::max(g.vpu_ns + extra_vpu,
                        hbm_ns(std::max(0.0, g.bytes + extra_bytes), m_.hw())) +
               m_.hw().kernel_overhead_ns;
    }
    double copy_ns(const hlo::Shape& from, const hlo::Shape& to) const {
        if (same_layout(from, to)) return 0;
        const bool pad = m_.options().padding;
        return hbm_ns(static_cast<double>(padded_bytes(from, pad) + padded_bytes(to, pad)),
                      m_.hw()) +
               m_.hw().kernel_overhead_ns;
    }

    std::vector<Group> groups_;
    std::unordered_map<int64_t, size_t> group_index_;  // union-find root -> group
    std::unordered_map<int64_t, size_t> group_of_;     // instruction id -> group
};

}  // namespace

std::unique_ptr<LayoutCostFamily> make_fusion_aware(const hlo::HloModule& module,
                                                    const std::vector<int64_t>& config_nodes,
                                                    const HwParams& hw,
                                                    const CostOptions& options) {
    return std::make_unique<FusionAware>(module, config_nodes, hw, options);
}

}  // namespace segrank::hw::costs
