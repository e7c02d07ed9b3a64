// Whole module under a layout configuration (docs/hwmodel.md#modules-under-a-layout-config).
#include "hwmodel/module_cost.h"

#include <algorithm>
#include <limits>
#include <unordered_set>

#include "gnn/core/check.h"
#include "hwmodel/padding.h"
#include "hwmodel/trip_count.h"

namespace segrank::hw {

namespace {

bool is_control(OpClass c) {
    return c == OpClass::kWhile || c == OpClass::kConditional || c == OpClass::kCall;
}

// `shape` under the partial layout of tensor t of `v`; unchanged when unset.
hlo::Shape relayout(const hlo::Shape& shape, const LayoutValues* v, int t, const std::string& who) {
    if (!v || shape.is_tuple()) return shape;
    const auto dims = layout_dims(*v, t);
    if (dims.empty()) return shape;
    try {
        return with_layout(shape, dims);
    } catch (const Error& e) {
        throw Error(str("layout config of '", who, "' tensor ", t, ": ", e.what()));
    }
}

// How well layout tensor t of `v` fits `s`: -1 cannot (a listed dim is not a dim of `s`, or
// repeats), 0 no preference (tensor unset, or `s` a tuple, which relayout() leaves alone), 1 a
// partial list (fewer dims than the rank; the real layout files list e.g. 2 of 3), 2 every dim.
int slot_fit(const LayoutValues& v, int t, const hlo::Shape& s) {
    const auto dims = layout_dims(v, t);
    if (dims.empty() || s.is_tuple()) return 0;
    const auto rank = static_cast<int64_t>(s.dims.size());
    std::vector<bool> seen(static_cast<size_t>(rank), false);
    for (int64_t d : dims) {
        if (d >= rank || seen[static_cast<size_t>(d)]) return -1;
        seen[static_cast<size_t>(d)] = true;
    }
    return static_cast<int64_t>(dims.size()) == rank ? 2 : 1;
}

}  // namespace

std::vector<int64_t> layout_dims(const LayoutValues& v, int t) {
    std::vector<int64_t> dims;
    for (int d = 0; d < 6; ++d) {
        const int8_t x = v[static_cast<size_t>(t * 6 + d)];
        if (x < 0) break;
        dims.push_back(x);
    }
    return dims;
}

std::array<int, 2> match_layout_operands(const LayoutValues& v,
                                         const std::vector<const hlo::Shape*>& operands) {
    const int n = static_cast<int>(operands.size());
    if (n < 2) return {n == 1 ? 0 : -1, -1};
    // Ordered pairs in id order, (0, 1) first: a later pair wins only with a strictly better fit.
    std::array<int, 2> best = {0, 1};
    int best_score = -1;
    for (int a = 0; a < n; ++a)
        for (int b = 0; b < n; ++b) {
            if (a == b) continue;
            const int fa = slot_fit(v, 1, *operands[static_cast<size_t>(a)]);
            const int fb = slot_fit(v, 2, *operands[static_cast<size_t>(b)]);
            if (fa < 0 || fb < 0 || fa + fb <= best_score) continue;
            best_score = fa + fb;
            best = {a, b};
        }
    return best;  // (0, 1) when nothing fits: relayout() then names the problem
}

namespace {

std::string key_of(const LayoutValues& v) {
    return std::string(reinterpret_cast<const char*>(v.data()), v.size());
}

}  // namespace

LayoutValues layout_values(const hlo::NodeLayoutConfig& node) {
    LayoutValues v;
    v.fill(-1);
    for (size_t t = 0; t < std::min<size_t>(3, node.tensors.size()); ++t)
        for (size_t d = 0; d < std::min<size_t>(6, node.tensors[t].size()); ++d)
            v[t * 6 + d] = static_cast<int8_t>(node.tensors[t][d]);
    return v;
}

LayoutModel::LayoutModel(const hlo::HloModule& module, std::vector<int64_t> config_nodes,
                         const HwParams& hw, const CostOptions& options)
    : idx_(module), hw_(hw), opt_(options), config_nodes_(std::move(config_nodes)) {
    const size_t nc = module.computations.size();
    std::unordered_set<int64_t> configurable;
    for (int64_t node : config_nodes_) configurable.insert(module.at(idx_.ref_of_node(node)).id);

    // Multiplicities: callers are stored after callees, so walk from the entry backwards.
    multiplicity_.assign(nc, 0.0);
    multiplicity_[idx_.entry()] = 1.0;
    for (size_t c = nc; c-- > 0;) {
        for (const auto& ins : module.computations[c].instructions) {
            const OpClass k = classify_opcode(ins.opcode);
            if (k == OpClass::kWhile) {
                double trips = hw_.default_trip_count;  // none found, or trip counts off
                if (const auto t = find_trip_count(idx_, ins); t && opt_.trip_counts)
                    trips = static_cast<double>(*t);
                trips_.emplace_back(ins.name, trips);
                for (int64_t cc : ins.called_computation_ids)
                    multiplicity_[idx_.computation(cc)] += multiplicity_[c] * trips;
            } else if (is_control(k)) {
                for (int64_t cc : ins.called_computation_ids)
                    multiplicity_[idx_.computation(cc)] += multiplicity_[c];
            }
        }
    }

    // Clusters per computation: walk each computation backwards so users are assigned first.
    clusters_.resize(nc);
    for (size_t c = 0; c < nc; ++c) {
        const auto& comp = module.computations[c];
        std::unordered_map<int64_t, std::vector<int64_t>> users;
        for (const auto& ins : comp.instructions)
            for (int64_t op : ins.operand_ids) {
                auto& u = users[op];
                if (std::find(u.begin(), u.end(), ins.id) == u.end()) u.push_back(ins.id);
            }
        const int64_t root_id = idx_.root(c).id;
        std::unordered_map<int64_t, size_t> cluster_of;
        std::vector<Cluster> order;
        for (size_t i = comp.instructions.size(); i-- > 0;) {
            const auto& ins = comp.instructions[i];
            const OpClass k = classify_opcode(ins.opcode);
            const bool config = configurable.count(ins.id) > 0;
            if (!config && (k == OpClass::kFree || is_control(k))) continue;
            if (!config && (k == OpClass::kReshape || k == OpClass::kTranspose) &&
                ins.opcode != "copy" && !ins.operand_ids.empty() &&
                op_work(ins, ins.shape, idx_.operand_shapes(ins), hw_, opt_).vpu_ns == 0)
                continue;  // a bitcast
            const auto& u = users[ins.id];
            const bool fusible = (k == OpClass::kElementwise || k == OpClass::kBroadcast) &&
                                 !config && ins.id != root_id && u.size() == 1 &&
                                 cluster_of.count(u[0]);
            if (fusible) {
                const size_t target = cluster_of[u[0]];
                cluster_of[ins.id] = target;
                order[target].members.push_back(&ins);
                order[target].ids.insert(ins.id);
            } else {
                cluster_of[ins.id] = order.size();
                Cluster cl;
                cl.root = &ins;
                cl.members.push_back(&ins);
                cl.ids.insert(ins.id);
                order.push_back(std::move(cl));
            }
        }
        std::reverse(order.begin(), order.end());
        clusters_[c] = std::move(order);
    }

    // Locate the cluster of each configurable node and its default cost.
    node_cluster_.resize(config_nodes_.size());
    node_default_.resize(config_nodes_.size());
    memo_.resize(config_nodes_.size());
    for (size_t k = 0; k < config_nodes_.size(); ++k) {
        const auto ref = idx_.ref_of_node(config_nodes_[k]);
        const auto& ins = module.at(ref);
        const auto& cls = clusters_[ref.computation];
        size_t found = cls.size();
        for (size_t j = 0; j < cls.size(); ++j)
            if (cls[j].root->id == ins.id) found = j;
        SEGRANK_ASSERT(found < cls.size(), "configurable node without a cluster");
        node_cluster_[k] = {ref.computation, found};
        node_default_[k] = cluster_cost(cls[found], nullptr, nullptr);
    }
    default_ = computation_cost(idx_.entry());
}

Breakdown LayoutModel::cluster_cost(const Cluster& c, const hlo::Instruction* configured,
                                    const LayoutValues* v) const {
    Breakdown b;
    const bool pad = opt_.padding;
    double bytes = 0;
    OpWork work;
    bool moves = false;
    for (const auto* m : c.members) {
        const bool cfg = m == configured;
        const hlo::Shape out = cfg ? relayout(m->shape, v, 0, m->name) : m->shape;
        std::vector<hlo::Shape> op_shapes;
        op_shapes.reserve(m->operand_ids.size());
        for (size_t i = 0; i < m->operand_ids.size(); ++i)
            op_shapes.push_back(idx_.instruction(m->operand_ids[i]).shape);
        std::vector<int> slot(op_shapes.size(),
                              0);  // layout tensor applied to each operand (0: none)
        if (cfg) {
            std::vector<const hlo::Shape*> original;
            for (const auto& s : op_shapes) original.push_back(&s);
            const auto match = match_layout_operands(*v, original);
            for (int t = 1; t <= 2; ++t)
                if (match[static_cast<size_t>(t - 1)] >= 0)
                    slot[static_cast<size_t>(match[static_cast<size_t>(t - 1)])] = t;
            for (size_t i = 0; i < op_shapes.size(); ++i)
                if (slot[i]) op_shapes[i] = relayout(op_shapes[i], v, slot[i], m->name);
        }
        std::vector<const hlo::Shape*> ops;
        for (const auto& s : op_shapes) ops.push_back(&s);
        OpWork w = op_work(*m, out, ops, hw_, opt_);
        if (m->opcode == "fusion")
            for (int64_t cc : m->called_computation_ids)
                for (const auto& f :
                     idx_.module().computations[idx_.computation(cc)].instructions) {
                    const OpWork fw = op_work(f, f.shape, idx_.operand_shapes(f), hw_, opt_);
                    w.mxu_ns += fw.mxu_ns;
                    w.vpu_ns += fw.vpu_ns;
                }
        work.mxu_ns += w.mxu_ns;
        work.vpu_ns += w.vpu_ns;
        work.ici_ns += w.ici_ns;
        if (w.mxu_ns > 0 || w.vpu_ns > 0 || w.ici_ns > 0 ||
            classify_opcode(m->opcode) == OpClass::kDataMovement || m->opcode == "copy")
            moves = true;
        std::unordered_set<int64_t> seen;
        for (size_t i = 0; i < m->operand_ids.size(); ++i) {
            const int64_t op = m->operand_ids[i];
            if (c.ids.count(op) || !seen.insert(op).second) continue;
            bytes += static_cast<double>(padded_bytes(op_shapes[i], pad));
        }
        if (m == c.root) bytes += static_cast<double>(padded_bytes(out, pad));
        if (cfg && opt_.copies) {
            // Layout changes against the producers' / consumers' layouts insert copies (step 2).
            auto copy_cost = [&](const hlo::Shape& from, const hlo::Shape& to) {
                if (from.is_tuple() ||
                    effective_minor_to_major(from) == effective_minor_to_major(to))
                    return 0.0;
                return hbm_ns(static_cast<double>(padded_bytes(from, pad) + padded_bytes(to, pad)),
                              hw_) +
                       hw_.kernel_overhead_ns;
            };
            b.copy_ns += copy_cost(m->shape, out);
            for (size_t i = 0; i < op_shapes.size(); ++i)
                if (slot[i])
                    b.copy_ns += copy_cost(idx_.instruction(m->operand_ids[i]).shape, op_shapes[i]);
        }
    }
    if (!moves && c.members.size() == 1 &&
        (c.root->opcode == "reshape" || c.root->opcode == "transpose")) {
        b.total_ns = b.copy_ns;  // still a bitcast under this layout: no kernel
        return b;
    }
    b.mxu_ns = work.mxu_ns;
    b.vpu_ns = work.vpu_ns;
    b.ici_ns = work.ici_ns;
    b.hbm_bytes = bytes;
    b.hbm_ns = hbm_ns(bytes, hw_);
    b.overhead_ns = hw_.kernel_overhead_ns;
    b.steps = 1;
    b.total_ns = std::max({b.mxu_ns, b.vpu_ns, b.hbm_ns}) + b.ici_ns + b.overhead_ns + b.copy_ns;
    return b;
}

Breakdown LayoutModel::computation_cost(size_t comp) {
    if (const auto it = comp_memo_.find(comp); it != comp_memo_.end()) return it->second;
    Breakdown total;
    for (const auto& cl : clusters_[comp]) total.add(cluster_cost(cl, nullptr, nullptr));
    for (const auto& ins : idx_.module().computations[comp].instructions) {
        const OpClass k = classify_opcode(ins.opcode);
        if (k == OpClass::kWhile) {
            double trips = hw_.default_trip_count;  // none found, or trip counts off
            if (const auto t = find_trip_count(idx_, ins); t && opt_.trip_counts)
                trips = static_cast<double>(*t);
            Breakdown iter;
            for (int64_t cc : ins.called_computation_ids)
                iter.add(computation_cost(idx_.computation(cc)));
            iter.overhead_ns += hw_.kernel_overhead_ns;
            iter.total_ns += hw_.kernel_overhead_ns;
            total.add(iter, trips);
        } else if (k == OpClass::kConditional) {
            Breakdown worst;
            bool any = false;
            for (int64_t cc : ins.called_computation_ids) {
                const Breakdown br = computation_cost(idx_.computation(cc));
                if (!any || br.total_ns > worst.total_ns) worst = br;
                any = true;
            }
            total.add(worst);
        } else if (k == OpClass::kCall) {
            for (int64_t cc : ins.called_computation_ids)
                total.add(computation_cost(idx_.computation(cc)));
        }
    }
    comp_memo_[comp] = total;
    return total;
}

const Breakdown& LayoutModel::node_delta(size_t k, const LayoutValues& v) {
    auto& memo = memo_[k];
    const std::string key = key_of(v);
    if (const auto it = memo.find(key); it != memo.end()) return it->second;
    const auto [comp, cl] = node_cluster_[k];
    const Cluster& cluster = clusters_[comp][cl];
    return memo.emplace(key, cluster_cost(cluster, cluster.root, &v)).first->second;
}

Breakdown LayoutModel::evaluate(const std::vector<LayoutValues>& config) {
    SEGRANK_CHECK(config.size() == config_nodes_.size(), "layout config has ", config.size(),
                  " nodes, the module has ", config_nodes_.size(), " configurable nodes");
    Breakdown b = default_;
    for (size_t k = 0; k < config.size(); ++k) {
        const double mult = multiplicity_[node_cluster_[k].first];
        b.add(node_delta(k, config[k]), mult);
        b.add(node_default_[k], -mult);
    }
    return b;
}

double LayoutModel::evaluate_ns(const int8_t* values) {
    double total = default_.total_ns;
    LayoutValues v;
    for (size_t k = 0; k < config_nodes_.size(); ++k) {
        std::copy(values + k * 18, values + k * 18 + 18, v.begin());
        const double mult = multiplicity_[node_cluster_[k].first];
        total += mult * (node_delta(k, v).total_ns - node_default_[k].total_ns);
    }
    return total;
}

Breakdown LayoutModel::evaluate(const std::vector<hlo::NodeLayoutConfig>& config) {
    std::vector<LayoutValues> v;
    v.reserve(config.size());
    for (const auto& n : config) v.push_back(layout_values(n));
    return evaluate(v);
}

std::vector<KernelRow> LayoutModel::kernels(const std::vector<LayoutValues>* config) {
    std::unordered_map<int64_t, size_t> configured;
    for (size_t k = 0; k < config_nodes_.size(); ++k)
        configured[idx_.module().at(idx_.ref_of_node(config_nodes_[k])).id] = k;
    std::vector<KernelRow> rows;
    for (size_t c = 0; c < clusters_.size(); ++c) {
        if (multiplicity_[c] == 0) continue;  // reducers and fused bodies: not kernels
        for (const auto& cl : clusters_[c]) {
            KernelRow r{cl.root->name,
                        cl.root->opcode,
                        shape_string(cl.root->shape),
                        idx_.module().computations[c].name,
                        multiplicity_[c],
                        static_cast<int32_t>(cl.members.size()),
                        {}};
            const auto it = configured.find(cl.root->id);
            if (config && it != configured.end())
                r.cost = node_delta(it->second, (*config)[it->second]);
            else
                r.cost = cluster_cost(cl, nullptr, nullptr);
            rows.push_back(std::move(r));
        }
    }
    return rows;
}

}  // namespace segrank::hw
