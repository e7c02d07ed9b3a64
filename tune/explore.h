// Which configs a round of `segrank tune` explores with one cost model (docs/tune.md#the-rounds):
// in the second half of the budget first the one-knob changes of the best config measured so far,
// the one the model ranks best first, then uniform draws of the rest; before, uniform draws. With
// several models of the task the rounds explore where they disagree instead (cli/tune_rounds.cpp).
#pragma once
#include <cstdint>
#include <span>
#include <vector>

#include "tune/config.h"

namespace segrank::tune {

/// How many knobs `a` and `b` set differently: layout: the (configurable node, tensor) slots (6
/// entries each: a node's output, input or kernel minor_to_major dims) whose entries differ;
/// tile: the bounds (entries of the 24-row, -0 equal to 0) that differ. 0 for equal configs.
/// Throws segrank::Error when the two are of different tasks or sizes.
int64_t knobs_apart(const Config& a, const Config& b);

/// The order in which a round with one cost model takes its exploration picks among `open` (the
/// round's candidates; `taken[i]` != 0 for those the round already took as best-ranked picks,
/// which are left out). With an `incumbent` (the best config measured so far, or the default when
/// none succeeded): first every config one knob apart from it, by `score` ascending (the model's
/// prediction, lower = faster; NaN last; ties by index), then the others in a uniform random order
/// of the stream (seed, round). Without one (null): all of them in that random order. Returns
/// indices into `open`, each untaken one once. Throws segrank::Error when the three spans differ
/// in length or a config's task or size differs from the incumbent's.
std::vector<int64_t> exploration_order(std::span<const Config> open, std::span<const double> score,
                                       std::span<const char> taken, const Config* incumbent,
                                       uint64_t seed, int64_t round);

}  // namespace segrank::tune
