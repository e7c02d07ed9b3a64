// The search space of one graph as a genome: built from its record, encode/decode, legality and
// the moves in it (docs/tune.md#search-space).
#include "tune/candidates.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <sstream>
#include <unordered_set>

#include "data/hlo/featurizer.h"
#include "gnn/core/check.h"
#include "hwmodel/from_graph.h"
#include "hwmodel/hardware.h"
#include "hwmodel/kernel_cost.h"
#include "hwmodel/synth/configs.h"
#include "tune/layout_dims.h"

namespace segrank::tune {

struct SearchSpace::TileKernel {
    hlo::HloModule module;
    hw::KernelModel model;
    TileKernel(hlo::HloModule m, const hw::HwParams& hw)
        : module(std::move(m)), model(module, hw) {}
};

namespace {

const char* kTensorNames[3] = {"output", "input", "kernel"};

// The leading positive entries of one S0(6) block of a tile row (its bounds).
std::vector<int64_t> block_bounds(const float* block) {
    std::vector<int64_t> out;
    for (int d = 0; d < 6 && block[d] != 0.0f; ++d) out.push_back(static_cast<int64_t>(block[d]));
    return out;
}

// A uniformly chosen value of 0..n-1 other than `current` (n >= 2).
int32_t other_choice(Rng& rng, int32_t current, int32_t n) {
    const auto v = static_cast<int32_t>(rng.uniform_int(static_cast<uint64_t>(n - 1)));
    return v >= current ? v + 1 : v;
}

// The recorded configs are the compiler's own, so they correct what the npz features lose
// (docs/tune.md#search-space):
// - npz graphs list operands by ascending node id, not in operand order (module_from_graph): a conv
//   or dot whose operands have different ranks may have input and kernel swapped. When some
//   recorded lists fit the swapped ranks (a full list of the other operand's rank) and none fits
//   the id order, they are swapped.
// - a recorded list naming dim d means the tensor has rank > d (features fold or lose dims);
// - recorded lists shorter than the rank (the real files list the 2 most-minor dims of many rank-4
//   and rank-5 tensors) make that length allowed for the slot.
void apply_recorded_evidence(const LayoutGraph& g, std::vector<LayoutNodeSpace>& nodes) {
    const auto nc = static_cast<size_t>(g.num_config_nodes());
    const auto configs = static_cast<size_t>(g.num_configs());
    if (g.node_config_feat.size() != configs * nc * kLayoutConfigDim) return;
    const auto row = [&](size_t j, size_t k) {
        return g.node_config_feat.data() + (j * nc + k) * kLayoutConfigDim;
    };
    for (size_t k = 0; k < nodes.size() && k < nc; ++k) {
        auto& r = nodes[k].ranks;
        if (r[1] >= 0 && r[2] >= 0 && r[1] != r[2]) {
            int64_t fits = 0, swapped = 0;
            for (size_t j = 0; j < configs; ++j) {
                const int in = listed_dims(row(j, k), 1), ker = listed_dims(row(j, k), 2);
                fits += (in == r[1] && in > 0) || (ker == r[2] && ker > 0);
                swapped += (in == r[2] && in > 0) || (ker == r[1] && ker > 0);
            }
            if (swapped > 0 && fits == 0) std::swap(r[1], r[2]);
        }
        for (size_t t = 0; t < 3; ++t) {
            int need = r[t];
            std::vector<bool> seen_len(kMaxLayoutRank + 1, false);
            for (size_t j = 0; j < configs; ++j) {
                const int8_t* v = row(j, k) + t * 6;
                const int len = listed_dims(row(j, k), static_cast<int>(t));
                if (len == 0) continue;
                seen_len[static_cast<size_t>(len)] = true;
                need = std::max(need, len);
                for (int d = 0; d < len; ++d)
                    if (v[d] >= 0 && v[d] < kMaxLayoutRank) need = std::max(need, v[d] + 1);
            }
            r[t] = need;
            auto& partial = nodes[k].partial_lengths[t];
            partial.clear();
            for (int len = 1; len < r[t]; ++len)
                if (seen_len[static_cast<size_t>(len)]) partial.push_back(len);
        }
    }
}

}  // namespace

std::vector<int64_t> tile_bound_choices(int64_t extent) {
    std::vector<int64_t> out;
    if (extent <= 1) return {1};
    for (int64_t s = 1; s <= extent; ++s) out.push_back((extent + s - 1) / s);
    for (int64_t v = 16; v < extent; v += 16) out.push_back(v);
    for (int64_t v = 1; v < extent; v *= 2) out.push_back(v);
    std::sort(out.begin(), out.end());
    out.erase(std::unique(out.begin(), out.end()), out.end());
    return out;
}

namespace {

// The list lengths slot t of node n may hold, ascending: its partial lengths, then the rank.
std::vector<int> slot_lengths(const LayoutNodeSpace& n, size_t t) {
    const int r = n.ranks[t];
    if (r <= 0) return {};
    std::vector<int> out;
    for (int len : n.partial_lengths[t])
        if (len >= 1 && len < r && (out.empty() || len > out.back())) out.push_back(len);
    out.push_back(r);
    return out;
}

// The dims list of choice v (>= 1) of slot t of node n.
const std::vector<int8_t>& slot_choice(const LayoutNodeSpace& n, size_t t, int32_t v) {
    size_t i = static_cast<size_t>(v - 1);
    for (int len : slot_lengths(n, t)) {
        const auto& list = arrangements(n.ranks[t], len);
        if (i < list.size()) return list[i];
        i -= list.size();
    }
    SEGRANK_ASSERT(false);
    return arrangements(0, 0)[0];
}

// The choice of a dims list in slot t of node n (the list must be allowed there).
int32_t slot_index(const LayoutNodeSpace& n, size_t t, std::span<const int8_t> dims) {
    int32_t offset = 1;
    for (int len : slot_lengths(n, t)) {
        if (static_cast<size_t>(len) == dims.size())
            return offset + arrangement_index(n.ranks[t], dims);
        offset += static_cast<int32_t>(arrangements(n.ranks[t], len).size());
    }
    SEGRANK_ASSERT(false);
    return 0;
}

// Nearest allowed bound on a log scale.
int32_t snap_bound(const std::vector<int64_t>& choices, int64_t bound) {
    int32_t pick = 0;
    double err = INFINITY;
    for (size_t j = 0; j < choices.size(); ++j) {
        const double e = std::abs(std::log(static_cast<double>(choices[j])) -
                                  std::log(static_cast<double>(std::max<int64_t>(1, bound))));
        if (e < err) err = e, pick = static_cast<int32_t>(j);
    }
    return pick;
}

}  // namespace

SearchSpace SearchSpace::layout(std::vector<LayoutNodeSpace> nodes) {
    SearchSpace s;
    s.task_ = Task::kLayout;
    for (size_t k = 0; k < nodes.size(); ++k)
        for (size_t t = 0; t < 3; ++t) {
            const int r = nodes[k].ranks[t];
            SEGRANK_CHECK(r >= -1 && r <= kMaxLayoutRank, "tune: configurable node ", k, " (index ",
                          nodes[k].node, ") has a ", kTensorNames[t], " tensor of rank ", r,
                          "; a layout config holds ranks 0..", kMaxLayoutRank);
            int64_t choices = 1;
            for (int len : slot_lengths(nodes[k], t))
                choices += static_cast<int64_t>(arrangements(r, len).size());
            s.choices_.push_back(static_cast<int32_t>(choices));
            s.default_genome_.push_back(0);
        }
    s.nodes_ = std::move(nodes);
    return s;
}

SearchSpace SearchSpace::tile(std::vector<int64_t> kernel_extents,
                              std::vector<int64_t> output_extents,
                              std::vector<int64_t> input_extents) {
    SearchSpace s;
    s.task_ = Task::kTile;
    size_t b = 0;
    for (const auto* ext : {&kernel_extents, &output_extents, &input_extents}) {
        SEGRANK_CHECK(ext->size() <= 6,
                      "tune: a tile config holds at most 6 bounds per block, got ", ext->size(),
                      " extents");
        s.block_sizes_[b++] = static_cast<int64_t>(ext->size());
        for (int64_t e : *ext) {
            SEGRANK_CHECK(e >= 1, "tune: tile extent ", e, " must be >= 1");
            s.tile_choices_.push_back(tile_bound_choices(e));
            s.choices_.push_back(static_cast<int32_t>(s.tile_choices_.back().size()));
            s.default_genome_.push_back(s.choices_.back() - 1);  // the whole extent
        }
    }
    return s;
}

SearchSpace SearchSpace::build(const TuneGraph& g) {
    const std::string where = g.path.empty() ? g.name : g.path.string();
    if (g.task == Task::kLayout) {
        const LayoutGraph& lg = g.layout;
        const hlo::HloModule m = hw::module_from_graph(lg);
        std::vector<LayoutNodeSpace> nodes;
        for (int64_t node : lg.node_config_ids) {
            const auto ref = m.find_instruction(node + 1);  // module_from_graph: id = index + 1
            SEGRANK_CHECK(ref.has_value(), where, ": configurable node ", node, " not found");
            const auto ranks = synth::layout_tensor_ranks(m, m.at(*ref));
            LayoutNodeSpace ns;
            ns.node = node;
            for (size_t t = 0; t < ranks.size() && t < 3; ++t) {
                SEGRANK_CHECK(ranks[t] <= kMaxLayoutRank, where, ": configurable node ", node,
                              " has a ", kTensorNames[t], " tensor of rank ", ranks[t],
                              "; a layout config holds ranks 0..", kMaxLayoutRank);
                ns.ranks[t] = static_cast<int>(ranks[t]);
            }
            nodes.push_back(ns);
        }
        apply_recorded_evidence(lg, nodes);
        return layout(std::move(nodes));
    }
    auto kernel = std::make_shared<TileKernel>(hw::module_from_graph(g.tile), hw::tpu_v3_core());
    // Block lengths: the recorded configs' most common (kernel, output, input) lengths (the
    // compiler's structure of this kernel; reshape kernels record none), else the model's.
    std::array<std::vector<int64_t>, 3> extents = {
        kernel->model.kernel_units(), kernel->model.iteration_units(), std::vector<int64_t>{}};
    const int64_t c = g.tile.num_configs();
    if (c > 0) {
        std::map<std::array<size_t, 3>, int64_t> patterns;
        for (int64_t j = 0; j < c; ++j) {
            const float* row = g.tile.config_feat.data() + j * kTileConfigDim;
            ++patterns[{block_bounds(row).size(), block_bounds(row + 8).size(),
                        block_bounds(row + 16).size()}];
        }
        const auto common =
            std::max_element(patterns.begin(), patterns.end(), [](auto& a, auto& b) {
                return a.second < b.second;
            })->first;
        for (size_t b = 0; b < 3; ++b) {
            // The model's extents when the lengths agree, else 1s; then at least every recorded
            // bound (a recorded bound is a tile the compiler accepted).
            if (extents[b].size() != common[b]) extents[b].assign(common[b], 1);
            for (int64_t j = 0; j < c; ++j) {
                const auto bounds =
                    block_bounds(g.tile.config_feat.data() + j * kTileConfigDim + b * 8);
                if (bounds.size() != common[b]) continue;
                for (size_t i = 0; i < bounds.size(); ++i)
                    extents[b][i] = std::max(extents[b][i], bounds[i]);
            }
        }
    }
    SearchSpace s = tile(extents[0], extents[1], extents[2]);
    // The default: hwmodel's compiler-default stand-in, each bound snapped to the nearest allowed
    // one (log scale); a list of another length keeps the whole extents.
    const hlo::TileSizeConfig best = kernel->model.best_tile();
    const std::array<const std::vector<int64_t>*, 3> best_blocks = {
        &best.kernel_bounds, &best.output_bounds, &best.input_bounds};
    size_t first = 0;
    for (size_t b = 0; b < 3; ++b) {
        const auto count = static_cast<size_t>(s.block_sizes_[b]);
        if (best_blocks[b]->size() == count)
            for (size_t i = 0; i < count; ++i)
                s.default_genome_[first + i] =
                    snap_bound(s.tile_choices_[first + i], (*best_blocks[b])[i]);
        first += count;
    }
    s.kernel_ = std::move(kernel);
    return s;
}

double SearchSpace::log10_size() const {
    double v = 0;
    for (int32_t c : choices_) v += std::log10(static_cast<double>(c));
    return v;
}

std::optional<std::string> SearchSpace::why_illegal(const Config& c) const {
    if (task_ == Task::kLayout) {
        if (c.task() != Task::kLayout) return "a tile config in a layout search space";
        const size_t want = nodes_.size() * kLayoutConfigDim;
        if (c.layout.size() != want)
            return "layout config of " + std::to_string(c.layout.size()) + " values, expected " +
                   std::to_string(nodes_.size()) + " nodes x 18 = " + std::to_string(want);
        for (size_t k = 0; k < nodes_.size(); ++k)
            for (size_t t = 0; t < 3; ++t) {
                const int8_t* s = c.layout.data() + k * kLayoutConfigDim + t * 6;
                const int len = listed_dims(s, 0);
                const std::string at = "node " + std::to_string(k) + " (index " +
                                       std::to_string(nodes_[k].node) + ") " + kTensorNames[t];
                for (int d = len; d < 6; ++d)
                    if (s[d] != -1)
                        return at + " slot " + std::to_string(d) + " = " +
                               std::to_string(static_cast<int>(s[d])) + " after a -1";
                if (len == 0) continue;
                const std::span<const int8_t> dims(s, static_cast<size_t>(len));
                const int r = nodes_[k].ranks[t];
                if (r < 0) return at + " " + dims_text(dims) + ": the node has no such tensor";
                const auto lens = slot_lengths(nodes_[k], t);
                if (std::find(lens.begin(), lens.end(), len) == lens.end()) {
                    std::string allowed;
                    for (int l : lens)
                        allowed += (allowed.empty() ? "" : " or ") + std::to_string(l);
                    return at + " " + dims_text(dims) + ": lists " + std::to_string(len) +
                           " dims of a rank-" + std::to_string(r) + " tensor (allowed: " + allowed +
                           ")";
                }
                std::vector<bool> used(static_cast<size_t>(r), false);
                bool ok = true;
                for (int8_t d : dims) {
                    ok = ok && d >= 0 && d < r && !used[static_cast<size_t>(d)];
                    if (ok) used[static_cast<size_t>(d)] = true;
                }
                if (!ok)
                    return at + " " + dims_text(dims) +
                           (len == r ? ": not a permutation of 0.."
                                     : ": not distinct dims of 0..") +
                           std::to_string(r - 1);
            }
        return std::nullopt;
    }
    if (c.task() != Task::kTile) return "a layout config in a tile search space";
    if (c.tile.size() != static_cast<size_t>(kTileConfigDim))
        return "tile config of " + std::to_string(c.tile.size()) + " values, expected 24";
    const char* block_names[3] = {"kernel", "output", "input"};
    size_t gene = 0;
    for (size_t b = 0; b < 3; ++b) {
        const float* block = c.tile.data() + b * 8;
        for (int i = 0; i < 8; ++i)
            if (!std::isfinite(block[i]) || block[i] < 0 || block[i] != std::floor(block[i]))
                return std::string(block_names[b]) + " bounds column " +
                       std::to_string(b * 8 + static_cast<size_t>(i)) + " = " +
                       std::to_string(block[i]) + " is not a non-negative integer";
        const auto bounds = block_bounds(block);
        if (static_cast<int64_t>(bounds.size()) != block_sizes_[b])
            return std::string(block_names[b]) + " bounds list " + std::to_string(bounds.size()) +
                   " values, expected " + std::to_string(block_sizes_[b]);
        hlo::TileSizeConfig t;
        t.kernel_bounds = bounds;
        const auto want = hlo::tile_config_features(t);
        if (!std::equal(want.begin(), want.begin() + 8, block))
            return std::string(block_names[b]) +
                   " bounds block is not S0(6) of its bounds (padding, sum or product differ)";
        for (size_t i = 0; i < bounds.size(); ++i, ++gene) {
            const auto& ch = tile_choices_[gene];
            if (!std::binary_search(ch.begin(), ch.end(), bounds[i]))
                return std::string(block_names[b]) + " bound " + std::to_string(i) + " = " +
                       std::to_string(bounds[i]) + " is not an allowed tile size of extent " +
                       std::to_string(ch.back());
        }
    }
    return std::nullopt;
}

std::optional<std::vector<int32_t>> SearchSpace::encode(const Config& c) const {
    if (why_illegal(c)) return std::nullopt;
    std::vector<int32_t> g;
    g.reserve(choices_.size());
    if (task_ == Task::kLayout) {
        for (size_t k = 0; k < nodes_.size(); ++k)
            for (size_t t = 0; t < 3; ++t) {
                const int8_t* s = c.layout.data() + k * kLayoutConfigDim + t * 6;
                const int len = listed_dims(s, 0);
                g.push_back(len == 0 ? 0 : slot_index(nodes_[k], t, {s, static_cast<size_t>(len)}));
            }
        return g;
    }
    size_t gene = 0;
    for (size_t b = 0; b < 3; ++b)
        for (int64_t v : block_bounds(c.tile.data() + b * 8)) {
            const auto& ch = tile_choices_[gene++];
            g.push_back(
                static_cast<int32_t>(std::lower_bound(ch.begin(), ch.end(), v) - ch.begin()));
        }
    return g;
}

Config SearchSpace::decode(std::span<const int32_t> genome) const {
    SEGRANK_CHECK(genome.size() == choices_.size(), "tune: genome of ", genome.size(),
                  " genes, the space has ", choices_.size());
    for (size_t i = 0; i < genome.size(); ++i)
        SEGRANK_CHECK(genome[i] >= 0 && genome[i] < choices_[i], "tune: gene ", i, " = ", genome[i],
                      " out of range 0..", choices_[i] - 1);
    Config c;
    if (task_ == Task::kLayout) {
        c.layout.assign(nodes_.size() * kLayoutConfigDim, int8_t{-1});
        for (size_t k = 0; k < nodes_.size(); ++k)
            for (size_t t = 0; t < 3; ++t) {
                const int32_t v = genome[k * 3 + t];
                if (v == 0) continue;
                const auto& p = slot_choice(nodes_[k], t, v);
                std::copy(p.begin(), p.end(),
                          c.layout.begin() + static_cast<ptrdiff_t>(k * 18 + t * 6));
            }
        return c;
    }
    hlo::TileSizeConfig t;
    size_t gene = 0;
    for (size_t b = 0; b < 3; ++b) {
        auto& list = b == 0 ? t.kernel_bounds : b == 1 ? t.output_bounds : t.input_bounds;
        for (int64_t i = 0; i < block_sizes_[b]; ++i, ++gene)
            list.push_back(tile_choices_[gene][static_cast<size_t>(genome[gene])]);
    }
    const auto row = hlo::tile_config_features(t);
    c.tile.assign(row.begin(), row.end());
    return c;
}

Config SearchSpace::default_config() const { return decode(default_genome_); }

Config SearchSpace::random_config(Rng& rng) const {
    std::vector<int32_t> g(choices_.size());
    for (size_t i = 0; i < g.size(); ++i)
        g[i] = static_cast<int32_t>(rng.uniform_int(static_cast<uint64_t>(choices_[i])));
    return decode(g);
}

namespace {
std::vector<int32_t> must_encode(const SearchSpace& s, const Config& c, const char* what) {
    auto g = s.encode(c);
    SEGRANK_CHECK(g.has_value(), "tune: ", what,
                  " of a config outside the search space: ", *s.why_illegal(c));
    return *g;
}
}  // namespace

Config SearchSpace::neighbor(const Config& c, Rng& rng) const {
    auto g = must_encode(*this, c, "neighbor");
    std::vector<size_t> movable;
    for (size_t i = 0; i < choices_.size(); ++i)
        if (choices_[i] >= 2) movable.push_back(i);
    if (movable.empty()) return c;
    const size_t i = movable[rng.uniform_int(movable.size())];
    if (task_ == Task::kLayout) {
        const LayoutNodeSpace& n = nodes_[i / 3];
        const size_t t = i % 3;
        if (g[i] > 0 && slot_choice(n, t, g[i]).size() >= 2 && rng.uniform() < 0.5) {
            // Swap two adjacent entries of the minor_to_major list: the smallest layout change.
            std::vector<int8_t> p = slot_choice(n, t, g[i]);
            const size_t d = rng.uniform_int(p.size() - 1);
            std::swap(p[d], p[d + 1]);
            g[i] = slot_index(n, t, p);
        } else {
            g[i] = other_choice(rng, g[i], choices_[i]);
        }
    } else {
        const int32_t n = choices_[i];
        if (rng.uniform() < 0.7) {
            // The next smaller or larger allowed bound.
            const bool up = g[i] == 0 || (g[i] < n - 1 && rng.uniform() < 0.5);
            g[i] += up ? 1 : -1;
        } else {
            g[i] = other_choice(rng, g[i], n);
        }
    }
    return decode(g);
}

Config SearchSpace::mutate(const Config& c, Rng& rng, double rate) const {
    auto g = must_encode(*this, c, "mutate");
    std::vector<size_t> movable;
    for (size_t i = 0; i < choices_.size(); ++i)
        if (choices_[i] >= 2) movable.push_back(i);
    if (movable.empty()) return c;
    bool changed = false;
    for (size_t i : movable)
        if (rng.uniform() < rate) g[i] = other_choice(rng, g[i], choices_[i]), changed = true;
    if (!changed) {
        const size_t i = movable[rng.uniform_int(movable.size())];
        g[i] = other_choice(rng, g[i], choices_[i]);
    }
    return decode(g);
}

Config SearchSpace::crossover(const Config& a, const Config& b, Rng& rng) const {
    auto ga = must_encode(*this, a, "crossover");
    const auto gb = must_encode(*this, b, "crossover");
    const size_t unit = task_ == Task::kLayout ? 3 : 1;  // a node's three slots travel together
    for (size_t first = 0; first < ga.size(); first += unit)
        if (rng.uniform() < 0.5)
            std::copy(gb.begin() + static_cast<ptrdiff_t>(first),
                      gb.begin() + static_cast<ptrdiff_t>(first + unit),
                      ga.begin() + static_cast<ptrdiff_t>(first));
    return decode(ga);
}

bool SearchSpace::feasible(const Config& c) const {
    if (!kernel_ || task_ != Task::kTile || c.tile.size() != static_cast<size_t>(kTileConfigDim))
        return true;
    return !kernel_->model.evaluate(hw::tile_config_from_features(c.tile.data())).invalid;
}

}  // namespace segrank::tune
