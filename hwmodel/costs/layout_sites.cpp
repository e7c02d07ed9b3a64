// Sites, their layouts and the local-cost base class of the layout families
// (docs/hwmodel.md#cost-families).
#include "hwmodel/costs/layout_sites.h"

#include <algorithm>

#include "gnn/core/check.h"
#include "hwmodel/padding.h"
#include "hwmodel/trip_count.h"

namespace segrank::hw::costs {

bool same_layout(const hlo::Shape& a, const hlo::Shape& b) {
    if (a.is_tuple() || b.is_tuple()) return true;
    return effective_minor_to_major(a) == effective_minor_to_major(b);
}

bool SiteLayout::operand_changed(size_t i, const Site& s) const {
    return slot[i] != 0 && !same_layout(s.operands[i]->shape, operands[i]);
}

bool launches_work(const hlo::Instruction& ins) {
    const OpClass k = classify_opcode(ins.opcode);
    return k != OpClass::kFree && k != OpClass::kWhile && k != OpClass::kConditional &&
           k != OpClass::kCall;
}

OpWork work_of(const ModuleIndex& idx, const hlo::Instruction& ins, const hlo::Shape& out,
               const std::vector<const hlo::Shape*>& operands, const HwParams& hw,
               const CostOptions& opt) {
    OpWork w = op_work(ins, out, operands, hw, opt);
    if (ins.opcode == "fusion")
        for (int64_t cc : ins.called_computation_ids)
            for (const auto& f : idx.module().computations[idx.computation(cc)].instructions) {
                const OpWork fw = op_work(f, f.shape, idx.operand_shapes(f), hw, opt);
                w.mxu_ns += fw.mxu_ns;
                w.vpu_ns += fw.vpu_ns;
            }
    return w;
}

SiteModule::SiteModule(const hlo::HloModule& module, const std::vector<int64_t>& config_nodes,
                       const HwParams& hw, const CostOptions& options)
    : idx_(module), hw_(hw), opt_(options) {
    const size_t nc = module.computations.size();
    // Multiplicities as in LayoutModel: callers are stored after callees.
    multiplicity_.assign(nc, 0.0);
    multiplicity_[idx_.entry()] = 1.0;
    for (size_t c = nc; c-- > 0;)
        for (const auto& ins : module.computations[c].instructions) {
            const OpClass k = classify_opcode(ins.opcode);
            double times = 1;
            if (k == OpClass::kWhile) {
                times = hw_.default_trip_count;
                if (const auto t = find_trip_count(idx_, ins); t && opt_.trip_counts)
                    times = static_cast<double>(*t);
            } else if (k != OpClass::kConditional && k != OpClass::kCall) {
                continue;
            }
            for (int64_t cc : ins.called_computation_ids)
                multiplicity_[idx_.computation(cc)] += multiplicity_[c] * times;
        }
    for (const auto& comp : module.computations)
        for (const auto& ins : comp.instructions)
            for (int64_t op : ins.operand_ids) {
                auto& u = users_[op];
                if (std::find(u.begin(), u.end(), &ins) == u.end()) u.push_back(&ins);
            }
    for (int64_t node : config_nodes) {
        const auto ref = idx_.ref_of_node(node);
        Site s;
        s.ins = &module.at(ref);
        s.computation = ref.computation;
        s.multiplicity = multiplicity_[ref.computation];
        for (int64_t op : s.ins->operand_ids) s.operands.push_back(&idx_.instruction(op));
        s.users = users(s.ins->id);
        site_of_[s.ins->id] = static_cast<int32_t>(sites_.size());
        sites_.push_back(std::move(s));
    }
}

int32_t SiteModule::site_of(int64_t id) const {
    const auto it = site_of_.find(id);
    return it == site_of_.end() ? -1 : it->second;
}

const std::vector<const hlo::Instruction*>& SiteModule::users(int64_t id) const {
    static const std::vector<const hlo::Instruction*> kNone;
    const auto it = users_.find(id);
    return it == users_.end() ? kNone : it->second;
}

namespace {

hlo::Shape apply(const hlo::Shape& shape, const LayoutValues& v, int t, const std::string& who) {
    if (shape.is_tuple()) return shape;
    const auto dims = layout_dims(v, t);
    if (dims.empty()) return shape;
    try {
        return with_layout(shape, dims);
    } catch (const Error& e) {
        throw Error(str("layout config of '", who, "' tensor ", t, ": ", e.what()));
    }
}

}  // namespace

SiteLayout SiteModule::resolve(size_t k, const LayoutValues& v) const {
    const Site& s = sites_[k];
    SiteLayout l;
    l.out = apply(s.ins->shape, v, 0, s.ins->name);
    l.out_set = !same_layout(l.out, s.ins->shape);
    std::vector<const hlo::Shape*> own;
    for (const auto* op : s.operands) {
        l.operands.push_back(op->shape);
        own.push_back(&op->shape);
    }
    l.slot.assign(s.operands.size(), 0);
    const auto match = match_layout_operands(v, own);
    for (int t = 1; t <= 2; ++t) {
        const int i = match[static_cast<size_t>(t - 1)];
        if (i < 0 || layout_dims(v, t).empty()) continue;
        l.slot[static_cast<size_t>(i)] = t;
        l.operands[static_cast<size_t>(i)] = apply(*own[static_cast<size_t>(i)], v, t, s.ins->name);
    }
    return l;
}

LocalLayoutCost::LocalLayoutCost(const hlo::HloModule& module,
                                 const std::vector<int64_t>& config_nodes, const HwParams& hw,
                                 const CostOptions& options)
    : m_(module, config_nodes, hw, options) {}

void LocalLayoutCost::init() {
    const auto& mod = m_.index().module();
    base_ns_ = 0;
    for (size_t c = 0; c < mod.computations.size(); ++c) {
        const double mult = m_.multiplicity(c);
        if (mult <= 0) continue;
        for (const auto& ins : mod.computations[c].instructions)
            if (launches_work(ins)) base_ns_ += mult * instruction_ns(ins);
    }
    LayoutValues unset;
    unset.fill(-1);
    memo_.assign(m_.num_sites(), {});
    default_.clear();
    for (size_t k = 0; k < m_.num_sites(); ++k) {
        Entry e;
        e.layout = m_.resolve(k, unset);
        e.ns = site_ns(k, e.layout);
        default_.push_back(std::move(e));
    }
    if (has_pairs()) {
        std::vector<const SiteLayout*> ls;
        for (const auto& e : default_) ls.push_back(&e.layout);
        default_pairs_ = pair_ns(ls);
    }
}

const LocalLayoutCost::Entry& LocalLayoutCost::entry(size_t k, const LayoutValues& v) {
    const std::string key(reinterpret_cast<const char*>(v.data()), v.size());
    auto& memo = memo_[k];
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
    Entry e;
    e.layout = m_.resolve(k, v);
    e.ns = site_ns(k, e.layout);
    ++memo_size_;
    return memo.emplace(key, std::move(e)).first->second;
}

double LocalLayoutCost::evaluate_ns(const int8_t* values) {
    // Bound the memo (10^5 configs x 10^3 sites): drop it between configs, never within one.
    if (memo_size_ > (int64_t{1} << 19)) {
        for (auto& m : memo_) m.clear();
        memo_size_ = 0;
    }
    double total = base_ns_;
    std::vector<const SiteLayout*> ls;
    if (has_pairs()) ls.reserve(m_.num_sites());
    LayoutValues v;
    for (size_t k = 0; k < m_.num_sites(); ++k) {
        std::copy(values + k * 18, values + k * 18 + 18, v.begin());
        const Entry& e = entry(k, v);
        total += m_.site(k).multiplicity * (e.ns - default_[k].ns);
        if (has_pairs()) ls.push_back(&e.layout);
    }
    if (has_pairs()) total += pair_ns(ls) - default_pairs_;
    return std::max(total, 1.0);
}

}  // namespace segrank::hw::costs
