// The search space of `segrank tune` and candidate generation (docs/tune.md#search-space): the
// legal configurations of one graph (layout: per configurable node a minor_to_major permutation or
// the default for each of its output, input and kernel; tile: per dim a tile bound the kernel's
// extents allow), local moves, mutation and crossover, and the generator the rounds loop asks for
// new, unmeasured candidates.
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "gnn/core/rng.h"
#include "tune/config.h"

namespace segrank::tune {

/// Largest tensor rank a layout slot holds (6 entries per tensor, docs/files.md).
inline constexpr int kMaxLayoutRank = 6;

/// Every minor_to_major permutation of 0..rank-1, in lexicographic order: rank! lists (one empty
/// list for rank 0). Throws segrank::Error unless 0 <= rank <= kMaxLayoutRank.
const std::vector<std::vector<int8_t>>& layout_permutations(int rank);

/// rank! (the number of layout_permutations(rank)); 0 <= rank <= kMaxLayoutRank.
int64_t num_layout_permutations(int rank);

/// Whether `dims` is a permutation of 0..dims.size()-1.
bool is_permutation(std::span<const int8_t> dims);

/// Every list of `len` distinct dims of 0..rank-1 in lexicographic order (rank! / (rank-len)! of
/// them): the `len` most-minor entries of a minor_to_major permutation, the rest left to the
/// compiler (the real layout files list 2 dims of many rank-4 and rank-5 tensors,
/// docs/tune.md#search-space). len == rank gives layout_permutations(rank). Throws segrank::Error
/// unless 0 <= len <= rank <= kMaxLayoutRank.
const std::vector<std::vector<int8_t>>& layout_arrangements(int rank, int len);

/// What a layout config may set on one configurable node: the rank of each of its three tensors
/// (0 output, 1 input = operand 0, 2 kernel = operand 1 of convolution and dot), or -1 when the
/// node has no such tensor (its slots stay -1), and the dims lists allowed for each. Ranks come
/// from the node's shape features (f21-26) and its operands', corrected by the graph's recorded
/// configs (docs/tune.md#search-space).
struct LayoutNodeSpace {
    int64_t node = 0;                      ///< node index in the graph (node_config_ids[k])
    std::array<int, 3> ranks{-1, -1, -1};  ///< -1 (absent) or 0..6
    /// Allowed list lengths of each tensor besides the full rank (ascending, each in 1..rank-1):
    /// partial lists of the most-minor dims, allowed where the graph's recorded configs use them.
    std::array<std::vector<int>, 3> partial_lengths{};
};

/// The legal configurations of one graph, as a genome: gene g takes one of num_choices(g) values.
/// Layout: one gene per (configurable node, tensor), choice 0 = the compiler default (-1 x 6),
/// then the layout_arrangements(rank, len) of each allowed partial length (ascending), then
/// layout_permutations(rank). Tile: one gene per bound (kernel, output, then input bounds), each
/// choosing from the allowed tile sizes of that dim (tile_bound_choices). Immutable after build;
/// cheap to copy.
class SearchSpace {
public:
    /// The space of `g` (docs/tune.md#search-space). Tile kernels are analysed by hwmodel
    /// (module_from_graph + KernelModel) for their extents. Throws segrank::Error naming g.path
    /// when the graph cannot be analysed or a layout node has a tensor of rank > 6.
    static SearchSpace build(const TuneGraph& g);
    /// A layout space from explicit node ranks (tests, callers that know the ranks).
    static SearchSpace layout(std::vector<LayoutNodeSpace> nodes);
    /// A tile space from explicit extents in tile units (major first): kernel_extents of the
    /// conv/dot weight operand (empty when none), output_extents of the iterated array,
    /// input_extents (usually none: no recorded tile sets input bounds).
    static SearchSpace tile(std::vector<int64_t> kernel_extents,
                            std::vector<int64_t> output_extents,
                            std::vector<int64_t> input_extents = {});

    Task task() const { return task_; }
    const std::vector<LayoutNodeSpace>& layout_nodes() const { return nodes_; }
    /// Tile: the allowed bounds of each kernel dim, then of each output dim, then each input dim.
    const std::vector<std::vector<int64_t>>& tile_choices() const { return tile_choices_; }
    /// Tile: how many bounds the kernel, output and input blocks list.
    const std::array<int64_t, 3>& tile_block_sizes() const { return block_sizes_; }

    int64_t num_genes() const { return static_cast<int64_t>(choices_.size()); }
    int64_t num_choices(int64_t gene) const { return choices_.at(static_cast<size_t>(gene)); }
    /// log10 of the number of configurations (the product of the choice counts).
    double log10_size() const;

    /// The genome of `c`, or nullopt when `c` is not in the space (why_illegal says why).
    std::optional<std::vector<int32_t>> encode(const Config& c) const;
    /// The config of a genome (genome.size() == num_genes(), each value < its choice count; else
    /// segrank::Error).
    Config decode(std::span<const int32_t> genome) const;
    /// nullopt when `c` is in the space, else the first reason it is not (e.g. "node 3 (index 17)
    /// input {0,0,1}: not a permutation of 0..2").
    std::optional<std::string> why_illegal(const Config& c) const;

    /// Layout: every slot at the compiler default. Tile: hwmodel's compiler-default stand-in
    /// (KernelModel::best_tile, docs/hwmodel.md) snapped to the allowed bounds when its lists have
    /// the space's lengths, else (and for spaces made by tile()) the whole extents.
    Config default_config() const;
    /// A uniform draw of every gene.
    Config random_config(Rng& rng) const;
    /// A local move: one gene changes (layout: a swap of two adjacent entries of a permutation, or
    /// another choice of the slot, default included; tile: the next smaller or larger allowed
    /// bound, or another one). The result differs from `c` whenever some gene has 2+ choices.
    /// `c` must be legal (else segrank::Error).
    Config neighbor(const Config& c, Rng& rng) const;
    /// Each gene redrawn with probability `rate` (at least one gene changes). `c` must be legal.
    Config mutate(const Config& c, Rng& rng, double rate) const;
    /// Uniform crossover: layout takes each configurable node's three slots together from one
    /// parent; tile takes each bound from one parent. Both must be legal.
    Config crossover(const Config& a, const Config& b, Rng& rng) const;

    /// Whether a legal config can run at all: tile configs of a space made by build() must fit
    /// the kernel's working set in VMEM (hwmodel's check,
    /// docs/hwmodel.md#kernels-under-a-tile-config: the compiler rejects the others); every other
    /// config is feasible. Generators skip infeasible ones.
    bool feasible(const Config& c) const;

private:
    struct TileKernel;  // the module and hwmodel's KernelModel of a tile graph (build())
    Task task_ = Task::kLayout;
    std::vector<LayoutNodeSpace> nodes_;
    std::vector<std::vector<int64_t>> tile_choices_;
    std::array<int64_t, 3> block_sizes_{0, 0, 0};
    std::vector<int32_t> choices_;
    std::vector<int32_t> default_genome_;
    // Shared by the copies of this (immutable) space; null for spaces not made by build().
    std::shared_ptr<const TileKernel> kernel_;
};

/// The allowed tile bounds of a dim of `extent` tile units, ascending (docs/tune.md#search-space):
/// the near-even splits ceil(extent / s) for s = 1..extent (every bound the fixture's recorded
/// tiles use on dims they split evenly), the multiples of 16 units below the extent (128 rows or
/// 16 elements: the fixture's dense-layer tiles 16, 32, 48, 64 of 125), and the powers of two below
/// it (synthetic collections' tiles, random_tile_config). E.g. 26 -> {1,2,3,4,5,6,7,8,9,13,16,26};
/// {1} for an extent <= 1.
std::vector<int64_t> tile_bound_choices(int64_t extent);

/// A config tried so far and its outcome (nullopt: the measurement failed).
struct Trial {
    Config config;
    std::optional<double> runtime_ns;
};

/// Knobs of CandidateGenerator::propose. The shares split the n proposals; what is left after
/// local, mutation and crossover is drawn uniformly (random restarts).
struct GeneratorOptions {
    double local_share = 0.4;      ///< neighbor() of a parent
    double mutation_share = 0.3;   ///< mutate() of a parent
    double crossover_share = 0.2;  ///< crossover() of two parents (then a 50% neighbor())
    int64_t parents = 8;           ///< the best measured configs (plus the default) used as parents
    double mutation_rate = 0.15;   ///< per-gene redraw probability of mutate()
};

/// Proposes new configurations for the rounds loop: local moves and evolution from the default and
/// the best measured configs, plus random draws.
class CandidateGenerator {
public:
    /// Throws segrank::Error when a share is negative or they sum above 1, or parents < 1.
    CandidateGenerator(SearchSpace space, uint64_t seed, GeneratorOptions options = {});

    /// Up to n distinct legal configs, none equal (by rows, config_key) to a config of `trials`
    /// (measured or failed). Parents: the default config and the `parents` fastest successful
    /// trials that are in the space. Deterministic in (seed, round, trials). Fewer than n only when
    /// the space has fewer unseen configs than that or they are too rare to find by sampling
    /// (after 50 n + 1000 draws).
    std::vector<Config> propose(int64_t n, std::span<const Trial> trials, int64_t round) const;

    const SearchSpace& space() const { return space_; }

private:
    SearchSpace space_;
    uint64_t seed_;
    GeneratorOptions opt_;
};

}  // namespace segrank::tune
