// Cost family "propagate" (docs/hwmodel.md#propagate): layouts assigned as XLA's layout-assignment
// pass does. A configured output layout propagates forward through the unconfigured elementwise
// users of the same shape (they are produced in it); a configured operand layout propagates back
// into an unconfigured producer that has no other user. Copies appear only where two fixed layouts
// meet: at layout-constrained consumers (dot, convolution, reshape, tuple, while, custom-call,
// collectives, the computation root) and between two configured nodes whose choices differ.
#include <algorithm>
#include <unordered_set>

#include "hwmodel/costs/families.h"
#include "hwmodel/costs/layout_sites.h"
#include "hwmodel/padding.h"

namespace segrank::hw::costs {
namespace {

// Consumers that accept any operand layout (they adopt it; XLA assigns their output from it).
bool layout_flexible(const hlo::Instruction& u) {
    switch (classify_opcode(u.opcode)) {
        case OpClass::kElementwise:
        case OpClass::kBroadcast:
        case OpClass::kReduce:
        case OpClass::kReduceWindow:
        case OpClass::kTranspose:
        case OpClass::kDataMovement:
            return true;
        default:
            return false;
    }
}

class Propagate : public LocalLayoutCost {
public:
    Propagate(const hlo::HloModule& module, const std::vector<int64_t>& nodes, const HwParams& hw,
              const CostOptions& opt)
        : LocalLayoutCost(module, nodes, hw, opt) {
        const size_t n = m_.num_sites();
        region_.resize(n);
        exits_.resize(n);
        for (size_t k = 0; k < n; ++k) {
            const Site& s = m_.site(k);
            // Region: unconfigured elementwise users of the same dims, transitively.
            std::vector<const hlo::Instruction*> members = {s.ins};
            std::unordered_set<int64_t> in = {s.ins->id};
            for (size_t i = 0; i < members.size(); ++i)
                for (const auto* u : m_.users(members[i]->id)) {
                    if (in.count(u->id) || m_.site_of(u->id) >= 0) continue;
                    if (classify_opcode(u->opcode) != OpClass::kElementwise ||
                        u->shape.is_tuple() || u->shape.dims != s.ins->shape.dims)
                        continue;
                    in.insert(u->id);
                    members.push_back(u);
                    region_[k].push_back(u);
                }
            const int64_t root = m_.index().root(s.computation).id;
            for (const auto* r : members) {
                bool constrained = r->id == root;
                for (const auto* u : m_.users(r->id)) {
                    if (in.count(u->id)) continue;
                    const int32_t b = m_.site_of(u->id);
                    if (b >= 0) {
                        for (size_t i = 0; i < u->operand_ids.size(); ++i)
                            if (u->operand_ids[i] == r->id)
                                pairs_.push_back({k, static_cast<size_t>(b), i, r});
                        continue;
                    }
                    if (!layout_flexible(*u)) constrained = true;
                }
                if (constrained) exits_[k].push_back(r);
            }
        }
        init();
    }

protected:
    double instruction_ns(const hlo::Instruction& ins) const override {
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
        // The node itself under its layouts.
        double ns = kernel_roofline_ns(work_of(m_.index(), *s.ins, l.out, ops, hw, m_.options()),
                                       kernel_bytes(*s.ins, l.out, ops, pad), hw);
        if (l.out_set) {
            // The region is produced in the propagated layout: written once, read once.
            for (const auto* r : region_[k]) {
                const double own = static_cast<double>(padded_bytes(r->shape, pad));
                const double now =
                    static_cast<double>(padded_bytes(with_layout_of(r->shape, l.out), pad));
                ns += hbm_ns(2 * (now - own), hw);
            }
            // Constrained consumers still read the old layout: one copy per exit.
            for (const auto* r : exits_[k])
                ns += copy_ns(r->shape, with_layout_of(r->shape, l.out));
        }
        for (size_t i = 0; i < l.operands.size(); ++i) {
            if (!l.operand_changed(i, s)) continue;
            const hlo::Instruction& p = *s.operands[i];
            if (m_.site_of(p.id) >= 0) continue;  // between two configured nodes: pair_ns
            if (launches_work(p) && m_.users(p.id).size() == 1) {
                // The producer is produced in the requested layout: only its bytes change.
                const double own = static_cast<double>(padded_bytes(p.shape, pad));
                const double now = static_cast<double>(padded_bytes(l.operands[i], pad));
                ns += hbm_ns(now - own, hw);
            } else {
                ns += copy_ns(p.shape, l.operands[i]);
            }
        }
        return ns;
    }

    bool has_pairs() const override { return true; }

    double pair_ns(const std::vector<const SiteLayout*>& ls) const override {
        double ns = 0;
        for (const Pair& e : pairs_) {
            const SiteLayout& a = *ls[e.producer];
            const SiteLayout& b = *ls[e.consumer];
            // One side left to the compiler adopts the other's layout: a conflict needs both.
            if (!a.out_set || b.slot[e.operand] == 0) continue;
            const hlo::Shape from = with_layout_of(e.value->shape, a.out);
            if (same_layout(from, b.operands[e.operand])) continue;
            ns += m_.site(e.consumer).multiplicity * copy_ns(from, b.operands[e.operand]);
        }
        return ns;
    }

private:
    double copy_ns(const hlo::Shape& from, const hlo::Shape& to) const {
        if (same_layout(from, to)) return 0;
        const bool pad = m_.options().padding;
        return hbm_ns(static_cast<double>(padded_bytes(from, pad) + padded_bytes(to, pad)),
                      m_.hw()) +
               m_.hw().kernel_overhead_ns;
    }

    struct Pair {
        size_t producer, consumer, operand;  // sites; operand position at the consumer
        const hlo::Instruction* value;       // what flows: the producer or a region member
    };
    std::vector<std::vector<const hlo::Instruction*>> region_;  // per site, without the site
    std::vector<std::vector<const hlo::Instruction*>> exits_;   // members read by a constraint
    std::vector<Pair> pairs_;
};

}  // namespace

std::unique_ptr<LayoutCostFamily> make_propagate(const hlo::HloModule& module,
                                                 const std::vector<int64_t>& config_nodes,
                                                 const HwParams& hw, const CostOptions& options) {
    return std::make_unique<Propagate>(module, config_nodes, hw, options);
}

}  // namespace segrank::hw::costs
