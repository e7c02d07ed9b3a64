// Per-node loop trip counts (docs/files.md#loop-trip-counts).
#include "hwmodel/loop_trips.h"

#include <algorithm>
#include <cmath>

#include "data/graph.h"
#include "hwmodel/trip_count.h"

namespace segrank::hw {

std::optional<int64_t> loop_trip_count(const ModuleIndex& index, const hlo::Instruction& w) {
    if (w.opcode != "while") return std::nullopt;
    if (w.known_trip_count) return w.known_trip_count;
    return find_trip_count(index, w);
}

std::vector<float> node_loop_trips(const hlo::HloModule& module) {
    const ModuleIndex idx(module);
    const size_t nc = module.computations.size();
    // Per computation: reached from the entry, log2 of its trip product, unknown flag. Callers are
    // stored after their callees (XLA's order), so one backward walk from the entry suffices.
    std::vector<uint8_t> reached(nc, 0), unknown(nc, 0);
    std::vector<double> log2_trips(nc, 0.0);
    reached[idx.entry()] = 1;
    for (size_t c = nc; c-- > 0;) {
        if (!reached[c]) continue;
        for (const auto& ins : module.computations[c].instructions) {
            if (ins.called_computation_ids.empty()) continue;
            double add = 0;
            bool unknown_here = false;
            if (ins.opcode == "while") {
                if (const auto t = loop_trip_count(idx, ins))
                    add = std::log2(static_cast<double>(*t));
                else
                    unknown_here = true;
            }
            for (int64_t id : ins.called_computation_ids) {
                const size_t cc = idx.computation(id);
                const double v = log2_trips[c] + add;
                log2_trips[cc] = reached[cc] ? std::max(log2_trips[cc], v) : v;
                unknown[cc] = static_cast<uint8_t>(unknown[cc] || unknown[c] || unknown_here);
                reached[cc] = 1;
            }
        }
    }
    std::vector<float> out;
    out.reserve(static_cast<size_t>(module.num_instructions()) * kLoopTripCols);
    for (size_t c = 0; c < nc; ++c)
        for (size_t i = 0; i < module.computations[c].instructions.size(); ++i) {
            out.push_back(static_cast<float>(std::min(64.0, log2_trips[c])));
            out.push_back(unknown[c] ? 1.0f : 0.0f);
        }
    return out;
}

}  // namespace segrank::hw
