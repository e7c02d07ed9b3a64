// The search space of one graph as a genome, its moves, and candidate generation
// (docs/tune.md#search-space).
#include "tune/candidates.h"

#include <algorithm>
#include <cmath>
#include <sstream>
#include <unordered_set>

#include "data/hlo/featurizer.h"
#include "gnn/core/check.h"
#include "hwmodel/from_graph.h"
#include "hwmodel/hardware.h"
#include "hwmodel/kernel_cost.h"
#include "hwmodel/synth/configs.h"

namespace segrank::tune {

struct SearchSpace::TileKernel {
    hlo::HloModule module;
    hw::KernelModel model;
    TileKernel(hlo::HloModule m, const hw::HwParams& hw)
        : module(std::move(m)), model(module, hw) {}
};

namespace {

std::vector<std::vector<std::vector<int8_t>>> all_permutations() {
    std::vector<std::vector<std::vector<int8_t>>> out(kMaxLayoutRank + 1);
    for (int r = 0; r <= kMaxLayoutRank; ++r) {
        std::vector<int8_t> p;
        for (int d = 0; d < r; ++d) p.push_back(static_cast<int8_t>(d));
        do {
            out[static_cast<size_t>(r)].push_back(p);
        } while (std::next_permutation(p.begin(), p.end()));
    }
    return out;
}

int64_t factorial(int r) {
    int64_t f = 1;
    for (int i = 2; i <= r; ++i) f *= i;
    return f;
}

/// Index of a permutation in lexicographic order (its Lehmer code).
int32_t permutation_index(std::span<const int8_t> p) {
    const int n = static_cast<int>(p.size());
    int64_t index = 0;
    for (int i = 0; i < n; ++i) {
        int smaller = 0;
        for (int j = i + 1; j < n; ++j) smaller += p[static_cast<size_t>(j)] < p[static_cast<size_t>(i)];
        index += smaller * factorial(n - 1 - i);
    }
    return static_cast<int32_t>(index);
}

const char* kTensorNames[3] = {"output", "input", "kernel"};

std::string dims_text(std::span<const int8_t> dims) {
    std::ostringstream os;
    os << '{';
    for (size_t i = 0; i < dims.size(); ++i) os << (i ? "," : "") << static_cast<int>(dims[i]);
    os << '}';
    return os.str();
}

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

// Length of the dims list tensor t of one node's 18 values gives (its entries before the first -1).
int listed_dims(const int8_t* values, int t) {
    int len = 0;
    while (len < 6 && values[t * 6 + len] != -1) ++len;
    return len;
}

// npz graphs list operands by ascending node id, not in operand order (module_from_graph), so a
// conv or dot whose operands have different ranks may have input and kernel swapped. The recorded
// configs are the compiler's own: when some list a full permutation of one operand's rank in the
// input slot or of the other's in the kernel slot, and none fits the id order, swap.
void orient_operands_by_records(const LayoutGraph& g, std::vector<LayoutNodeSpace>& nodes) {
    const auto nc = static_cast<size_t>(g.num_config_nodes());
    const auto configs = static_cast<size_t>(g.num_configs());
    if (g.node_config_feat.size() != configs * nc * kLayoutConfigDim) return;
    for (size_t k = 0; k < nodes.size() && k < nc; ++k) {
        auto& r = nodes[k].ranks;
        if (r[1] < 0 || r[2] < 0 || r[1] == r[2]) continue;
        int64_t fits = 0, swapped = 0;
        for (size_t j = 0; j < configs; ++j) {
            const int8_t* v = g.node_config_feat.data() + (j * nc + k) * kLayoutConfigDim;
            const int in = listed_dims(v, 1), ker = listed_dims(v, 2);
            fits += (in == r[1] && in > 0) || (ker == r[2] && ker > 0);
            swapped += (in == r[2] && in > 0) || (ker == r[1] && ker > 0);
        }
        if (swapped > 0 && fits == 0) std::swap(r[1], r[2]);
    }
}

}  // namespace

const std::vector<std::vector<int8_t>>& layout_permutations(int rank) {
    static const auto table = all_permutations();
    SEGRANK_CHECK(rank >= 0 && rank <= kMaxLayoutRank, "layout tensor rank ", rank,
                  " out of range 0..", kMaxLayoutRank);
    return table[static_cast<size_t>(rank)];
}

int64_t num_layout_permutations(int rank) {
    SEGRANK_CHECK(rank >= 0 && rank <= kMaxLayoutRank, "layout tensor rank ", rank,
                  " out of range 0..", kMaxLayoutRank);
    return factorial(rank);
}

bool is_permutation(std::span<const int8_t> dims) {
    std::vector<bool> seen(dims.size(), false);
    for (int8_t d : dims) {
        if (d < 0 || static_cast<size_t>(d) >= dims.size() || seen[static_cast<size_t>(d)])
            return false;
        seen[static_cast<size_t>(d)] = true;
    }
    return true;
}

std::vector<int64_t> tile_bound_choices(int64_t extent) {
    std::vector<int64_t> out;
    for (int64_t v = 1; v < extent; v *= 2) out.push_back(v);
    out.push_back(std::max<int64_t>(1, extent));
    return out;
}

SearchSpace SearchSpace::layout(std::vector<LayoutNodeSpace> nodes) {
    SearchSpace s;
    s.task_ = Task::kLayout;
    for (size_t k = 0; k < nodes.size(); ++k)
        for (int t = 0; t < 3; ++t) {
            const int r = nodes[k].ranks[static_cast<size_t>(t)];
            SEGRANK_CHECK(r >= -1 && r <= kMaxLayoutRank, "tune: configurable node ", k,
                          " (index ", nodes[k].node, ") has a ", kTensorNames[t],
                          " tensor of rank ", r, "; a layout config holds ranks 0..",
                          kMaxLayoutRank);
            s.choices_.push_back(r <= 0 ? 1 : static_cast<int32_t>(1 + factorial(r)));
            s.default_genome_.push_back(0);
        }
    s.nodes_ = std::move(nodes);
    return s;
}

SearchSpace SearchSpace::tile(std::vector<int64_t> kernel_extents,
                              std::vector<int64_t> output_extents) {
    SEGRANK_CHECK(kernel_extents.size() <= 6 && output_extents.size() <= 6,
                  "tune: a tile config holds at most 6 bounds per tensor, got ",
                  kernel_extents.size(), " kernel and ", output_extents.size(), " output extents");
    SearchSpace s;
    s.task_ = Task::kTile;
    s.num_kernel_bounds_ = static_cast<int64_t>(kernel_extents.size());
    for (const auto* ext : {&kernel_extents, &output_extents})
        for (int64_t e : *ext) {
            SEGRANK_CHECK(e >= 1, "tune: tile extent ", e, " must be >= 1");
            s.tile_choices_.push_back(tile_bound_choices(e));
            s.choices_.push_back(static_cast<int32_t>(s.tile_choices_.back().size()));
            s.default_genome_.push_back(s.choices_.back() - 1);  // the whole extent
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
        orient_operands_by_records(lg, nodes);
        return layout(std::move(nodes));
    }
    auto kernel = std::make_shared<TileKernel>(hw::module_from_graph(g.tile), hw::tpu_v3_core());
    SearchSpace s = tile(kernel->model.kernel_units(), kernel->model.iteration_units());
    // The default: hwmodel's compiler-default stand-in, each bound snapped to the nearest allowed
    // one (log scale); a list of another length keeps the whole extents.
    const hlo::TileSizeConfig best = kernel->model.best_tile();
    const auto snap = [&](const std::vector<int64_t>& bounds, size_t first, size_t count) {
        if (bounds.size() != count) return;
        for (size_t i = 0; i < count; ++i) {
            const auto& ch = s.tile_choices_[first + i];
            size_t pick = 0;
            double err = INFINITY;
            for (size_t j = 0; j < ch.size(); ++j) {
                const double e = std::abs(std::log(static_cast<double>(ch[j])) -
                                          std::log(std::max<double>(1.0, bounds[i])));
                if (e < err) err = e, pick = j;
            }
            s.default_genome_[first + i] = static_cast<int32_t>(pick);
        }
    };
    const auto nk = static_cast<size_t>(s.num_kernel_bounds_);
    snap(best.kernel_bounds, 0, nk);
    snap(best.output_bounds, nk, s.tile_choices_.size() - nk);
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
            for (int t = 0; t < 3; ++t) {
                const int8_t* s = c.layout.data() + k * kLayoutConfigDim + t * 6;
                size_t len = 0;
                while (len < 6 && s[len] != -1) ++len;
                const std::string at = "node " + std::to_string(k) + " (index " +
                                       std::to_string(nodes_[k].node) + ") " + kTensorNames[t];
                for (size_t d = len; d < 6; ++d)
                    if (s[d] != -1)
                        return at + " slot " + std::to_string(d) + " = " +
                               std::to_string(static_cast<int>(s[d])) + " after a -1";
                if (len == 0) continue;
                const std::span<const int8_t> dims(s, len);
                const int r = nodes_[k].ranks[static_cast<size_t>(t)];
                if (r < 0) return at + " " + dims_text(dims) + ": the node has no such tensor";
                if (static_cast<int>(len) != r)
                    return at + " " + dims_text(dims) + ": lists " + std::to_string(len) +
                           " dims of a rank-" + std::to_string(r) + " tensor";
                if (!is_permutation(dims))
                    return at + " " + dims_text(dims) + ": not a permutation of 0.." +
                           std::to_string(r - 1);
            }
        return std::nullopt;
    }
    if (c.task() != Task::kTile) return "a layout config in a tile search space";
    if (c.tile.size() != static_cast<size_t>(kTileConfigDim))
        return "tile config of " + std::to_string(c.tile.size()) + " values, expected 24";
    const auto expected = [&](const std::vector<int64_t>& bounds) {
        hlo::TileSizeConfig t;
        t.kernel_bounds = bounds;
        return hlo::tile_config_features(t);
    };
    const char* block_names[3] = {"kernel", "output", "input"};
    const size_t nk = static_cast<size_t>(num_kernel_bounds_);
    const size_t counts[3] = {nk, tile_choices_.size() - nk, 0};
    size_t gene = 0;
    for (int b = 0; b < 3; ++b) {
        const float* block = c.tile.data() + b * 8;
        for (int i = 0; i < 8; ++i)
            if (!std::isfinite(block[i]) || block[i] < 0 || block[i] != std::floor(block[i]))
                return std::string(block_names[b]) + " bounds column " + std::to_string(b * 8 + i) +
                       " = " + std::to_string(block[i]) + " is not a non-negative integer";
        const auto bounds = block_bounds(block);
        if (bounds.size() != counts[b])
            return std::string(block_names[b]) + " bounds list " + std::to_string(bounds.size()) +
                   " values, expected " + std::to_string(counts[b]);
        const auto want = expected(bounds);
        if (!std::equal(want.begin(), want.begin() + 8, block))
            return std::string(block_names[b]) +
                   " bounds block is not S0(6) of its bounds (padding, sum or product differ)";
        for (size_t i = 0; i < bounds.size(); ++i, ++gene) {
            const auto& ch = tile_choices_[gene];
            if (std::find(ch.begin(), ch.end(), bounds[i]) == ch.end())
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
            for (int t = 0; t < 3; ++t) {
                const int8_t* s = c.layout.data() + k * kLayoutConfigDim + t * 6;
                const int r = nodes_[k].ranks[static_cast<size_t>(t)];
                g.push_back(r <= 0 || s[0] == -1
                                ? 0
                                : 1 + permutation_index({s, static_cast<size_t>(r)}));
            }
        return g;
    }
    size_t gene = 0;
    for (int b = 0; b < 2; ++b)
        for (int64_t v : block_bounds(c.tile.data() + b * 8)) {
            const auto& ch = tile_choices_[gene++];
            g.push_back(static_cast<int32_t>(std::find(ch.begin(), ch.end(), v) - ch.begin()));
        }
    return g;
}

Config SearchSpace::decode(std::span<const int32_t> genome) const {
    SEGRANK_CHECK(genome.size() == choices_.size(), "tune: genome of ", genome.size(),
                  " genes, the space has ", choices_.size());
    for (size_t i = 0; i < genome.size(); ++i)
        SEGRANK_CHECK(genome[i] >= 0 && genome[i] < choices_[i], "tune: gene ", i, " = ",
                      genome[i], " out of range 0..", choices_[i] - 1);
    Config c;
    if (task_ == Task::kLayout) {
        c.layout.assign(nodes_.size() * kLayoutConfigDim, int8_t{-1});
        for (size_t k = 0; k < nodes_.size(); ++k)
            for (size_t t = 0; t < 3; ++t) {
                const int32_t v = genome[k * 3 + t];
                if (v == 0) continue;
                const auto& p = layout_permutations(nodes_[k].ranks[t])[static_cast<size_t>(v - 1)];
                std::copy(p.begin(), p.end(), c.layout.begin() + static_cast<ptrdiff_t>(k * 18 + t * 6));
            }
        return c;
    }
    hlo::TileSizeConfig t;
    for (size_t i = 0; i < genome.size(); ++i) {
        const int64_t b = tile_choices_[i][static_cast<size_t>(genome[i])];
        (static_cast<int64_t>(i) < num_kernel_bounds_ ? t.kernel_bounds : t.output_bounds).push_back(b);
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
    SEGRANK_CHECK(g.has_value(), "tune: ", what, " of a config outside the search space: ",
                  *s.why_illegal(c));
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
        const int r = nodes_[i / 3].ranks[i % 3];
        if (g[i] > 0 && r >= 2 && rng.uniform() < 0.5) {
            // Swap two adjacent entries of the minor_to_major list: the smallest layout change.
            std::vector<int8_t> p = layout_permutations(r)[static_cast<size_t>(g[i] - 1)];
            const size_t d = rng.uniform_int(static_cast<uint64_t>(r - 1));
            std::swap(p[d], p[d + 1]);
            g[i] = 1 + permutation_index(p);
        } else {
            g[i] = other_choice(rng, g[i], choices_[i]);
        }
    } else {
        const int32_t n = choices_[i];
        if (rng.uniform() < 0.7) {
            // The next smaller or larger allowed bound (a factor of about 2).
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

CandidateGenerator::CandidateGenerator(SearchSpace space, uint64_t seed, GeneratorOptions options)
    : space_(std::move(space)), seed_(seed), opt_(options) {
    SEGRANK_CHECK(opt_.local_share >= 0 && opt_.mutation_share >= 0 && opt_.crossover_share >= 0 &&
                      opt_.local_share + opt_.mutation_share + opt_.crossover_share <= 1.0 + 1e-9,
                  "tune: generator shares local ", opt_.local_share, ", mutation ",
                  opt_.mutation_share, ", crossover ", opt_.crossover_share,
                  " must be >= 0 and sum to at most 1");
    SEGRANK_CHECK(opt_.parents >= 1, "tune: generator parents = ", opt_.parents,
                  ", expected >= 1");
    SEGRANK_CHECK(opt_.mutation_rate >= 0 && opt_.mutation_rate <= 1,
                  "tune: generator mutation_rate = ", opt_.mutation_rate, ", expected 0..1");
}

std::vector<Config> CandidateGenerator::propose(int64_t n, std::span<const Trial> trials,
                                                int64_t round) const {
    SEGRANK_CHECK(n >= 0, "tune: cannot propose ", n, " candidates");
    std::vector<Config> out;
    if (n == 0) return out;
    std::unordered_set<std::string> seen;
    for (const Trial& t : trials) seen.insert(config_key(t.config));
    const auto take = [&](Config c) {
        if (static_cast<int64_t>(out.size()) >= n || !space_.feasible(c)) return false;
        if (!seen.insert(config_key(c)).second) return false;
        out.push_back(std::move(c));
        return true;
    };

    // A small space is enumerated, so the generator never misses its last unseen configs.
    if (space_.log10_size() <= std::log10(4096.0) + 1e-9) {
        std::vector<Config> unseen;
        std::vector<int32_t> g(static_cast<size_t>(space_.num_genes()), 0);
        for (;;) {
            Config c = space_.decode(g);
            if (!seen.count(config_key(c)) && space_.feasible(c)) unseen.push_back(std::move(c));
            size_t i = 0;
            while (i < g.size() && ++g[i] == space_.num_choices(static_cast<int64_t>(i))) g[i++] = 0;
            if (i == g.size()) break;
        }
        if (static_cast<int64_t>(unseen.size()) <= n) {
            for (auto& c : unseen) take(std::move(c));
            return out;
        }
    }

    // Parents: the default, then the fastest successful trials inside the space (ties by order).
    std::vector<size_t> order;
    for (size_t i = 0; i < trials.size(); ++i)
        if (trials[i].runtime_ns && space_.encode(trials[i].config)) order.push_back(i);
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
        return *trials[a].runtime_ns < *trials[b].runtime_ns;
    });
    std::vector<Config> parents;
    for (size_t i = 0; i < order.size() && static_cast<int64_t>(parents.size()) < opt_.parents; ++i)
        parents.push_back(trials[order[i]].config);
    const Config def = space_.default_config();
    if (std::none_of(parents.begin(), parents.end(), [&](const Config& p) { return p == def; }))
        parents.push_back(def);

    Rng rng = Rng::derive(seed_, static_cast<uint64_t>(round), trials.size(), "tune-propose");
    // Parent i of P with probability decreasing in i (fastest first): floor(P u^2).
    const auto pick = [&]() -> const Config& {
        const double u = rng.uniform();
        return parents[std::min(parents.size() - 1,
                                static_cast<size_t>(static_cast<double>(parents.size()) * u * u))];
    };
    const int64_t quota[3] = {std::llround(static_cast<double>(n) * opt_.local_share),
                              std::llround(static_cast<double>(n) * opt_.mutation_share),
                              std::llround(static_cast<double>(n) * opt_.crossover_share)};
    int64_t attempts = 50 * n + 1000;
    for (int kind = 0; kind < 3; ++kind) {
        int64_t made = 0;
        for (int64_t tries = 0; made < quota[kind] && tries < 20 * quota[kind] + 20 && attempts > 0;
             ++tries, --attempts) {
            Config c;
            if (kind == 0) {
                c = space_.neighbor(pick(), rng);
            } else if (kind == 1) {
                c = space_.mutate(pick(), rng, opt_.mutation_rate);
            } else {
                c = space_.crossover(pick(), pick(), rng);
                if (rng.uniform() < 0.5) c = space_.neighbor(c, rng);
            }
            made += take(std::move(c));
        }
    }
    while (static_cast<int64_t>(out.size()) < n && attempts-- > 0) take(space_.random_config(rng));
    return out;
}

}  // namespace segrank::tune
