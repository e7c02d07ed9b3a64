// Best-checkpoint choice and early stopping (docs/config.md#run-directory): rank 0 decides from its
// exact selection value and broadcasts the decision and the resulting state, so every rank takes
// the same collective path (saving "best" gathers the HistoryTable from every rank) and keeps the
// same patience counter.
#pragma once
#include <cstdint>

#include "trainer/comm.h"

namespace segrank {

/// The run's best evaluation so far and the patience counter; identical on every rank when every
/// update goes through decide_selection().
struct SelectionState {
    double best = -1e300;                   ///< highest selection value seen (higher is better)
    int64_t best_step = -1;                 ///< step of that evaluation; -1 = none yet
    int64_t evals_without_improvement = 0;  ///< evaluations since the last improvement
};

/// What the run does after an evaluation; the same on every rank.
struct SelectionDecision {
    bool improved = false;  ///< the evaluation is the new best: save the "best" checkpoint
    bool stop = false;      ///< patience exhausted: stop training
};

/// How an evaluation counts.
struct SelectionRule {
    int64_t patience = 0;         ///< train.patience; 0 = never stop
    bool count_patience = false;  ///< in-loop evaluations: a non-improvement counts toward patience
    bool first_is_best = false;   ///< final evaluation: improved also when no best exists yet
    /// eval.select_later_on_ties: a selection equal to state.best is improved too (the later
    /// checkpoint becomes best), but counts toward patience like a non-improvement.
    bool later_on_ties = false;
};

/// Rank 0 compares its `selection` with state.best (improved when greater, or per
/// rule.first_is_best, or equal with rule.later_on_ties); improved sets best = selection,
/// best_step = step and, with rule.count_patience, resets the counter unless it was a tie;
/// otherwise (and on a tie) count_patience increments it, and stop =
/// patience > 0 && counter >= patience. Rank 0's decision and updated state are broadcast bit for
/// bit and every rank adopts them, whatever `selection` and `state` were on the other ranks.
/// Collective: every rank calls it at the same point.
SelectionDecision decide_selection(Communicator& comm, SelectionState& state, double selection,
                                   int64_t step, const SelectionRule& rule);

/// Rank `root`'s `v` on every rank, bit for bit. Collective.
double broadcast_double(Communicator& comm, double v, int root);

}  // namespace segrank
