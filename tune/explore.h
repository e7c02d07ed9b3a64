// Which configs a round of `segrank tune` explores with one cost model (docs/tune.md#the-rounds):
// in the second half of the budget first the one-knob changes of the best config measured so far,
// spread over the kinds of knob by how often measured changes of each kind moved the runtime, the
// one the model ranks best first within a kind, then uniform draws of the rest; before, uniform
// draws. With several models of the task the rounds explore where they disagree instead
// (cli/tune_rounds.cpp).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "tune/config.h"

namespace segrank::tune {

/// How many knobs `a` and `b` set differently: layout: the (configurable node, tensor) slots (6
/// entries each: a node's output, input or kernel minor_to_major dims) whose entries differ;
/// tile: the bounds (entries 0-5 of each 8-entry block of the 24-row; entries 6 and 7 are their
/// sum and product; -0 equal to 0) that differ. 0 for equal configs.
/// Throws segrank::Error when the two are of different tasks or sizes.
int64_t knobs_apart(const Config& a, const Config& b);

/// The kinds of knob: layout: a node's output (0), input (1) or kernel (2) dims; tile: a kernel
/// (0), output (1) or input (2) bound (config_feat columns 0-7, 8-15, 16-23).
inline constexpr int kKnobKinds = 3;

/// The kind (0..kKnobKinds-1) of the one knob `a` and `b` set differently; -1 when they are equal
/// or more than one knob apart. Throws segrank::Error as knobs_apart.
int one_knob_kind(const Config& a, const Config& b);

/// Two runtimes whose relative difference is at most this are the same runtime (a change that did
/// not move it): a noise-free cost gives exact ties when a knob does not matter.
inline constexpr double kSameRuntime = 1e-9;

/// Per kind of knob, how often measured one-knob changes moved the runtime.
struct KnobSensitivity {
    /// pairs of successful measurements one knob of the kind apart
    std::array<int64_t, kKnobKinds> pairs{};
    /// of those, the pairs whose runtimes differ (relative difference > kSameRuntime)
    std::array<int64_t, kKnobKinds> moved{};
    /// (moved + 1) / (pairs + 2) of `kind`: the share of moved pairs, one moved and one unmoved
    /// pair added (1/2 for a kind without pairs). In (0, 1).
    double weight(int kind) const;
};

/// Counts every pair of `configs` (successful measurements, runtimes in ns, > 0) one knob apart.
/// O(n^2) config comparisons for n configs. Throws segrank::Error when the spans differ in length
/// or the configs in task or size.
KnobSensitivity knob_sensitivity(std::span<const Config> configs,
                                 std::span<const double> runtimes_ns);

/// Whether the last round improved: some successful measurement of the last round (the largest
/// entry of `rounds`, the round of each measurement in order) is faster than every successful
/// measurement before that round. True when nothing was measured or nothing succeeded before the
/// last round and it has a success. Throws segrank::Error when the spans differ in length or the
/// rounds decrease.
bool last_round_improved(std::span<const int64_t> rounds,
                         std::span<const std::optional<double>> runtimes_ns);

/// The order in which a round with one cost model takes its exploration picks among `open` (the
/// round's candidates; `taken[i]` != 0 for those the round already took as best-ranked picks,
/// which are left out). With an `incumbent` (the best config measured so far, or the default when
/// none succeeded): first every config one knob apart from it, then the others in a uniform random
/// order of the stream (seed, round). The one-knob configs are ordered by `score` ascending (the
/// model's prediction, lower = faster; NaN last; ties by index), or, with `kinds`, interleaved
/// over the kinds of knob in proportion to kinds->weight: each next one is the best-scored left of
/// the kind k with the least (taken of k + 1) / weight(k) among the kinds with one left (ties by
/// kind). Without an incumbent (null): all of them in the random order. Returns indices into
/// `open`, each untaken one once. Throws segrank::Error when the three spans differ in length or a
/// config's task or size differs from the incumbent's.
std::vector<int64_t> exploration_order(std::span<const Config> open, std::span<const double> score,
                                       std::span<const char> taken, const Config* incumbent,
                                       uint64_t seed, int64_t round,
                                       const KnobSensitivity* kinds = nullptr);

}  // namespace segrank::tune
