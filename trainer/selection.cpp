// decide_selection / broadcast_double (see selection.h).
#include "trainer/selection.h"

#include <cstddef>
#include <span>

namespace segrank {

namespace {

struct Packet {
    double best;
    int64_t best_step;
    int64_t evals_without_improvement;
    int64_t improved;
    int64_t stop;
};

}  // namespace

SelectionDecision decide_selection(Communicator& comm, SelectionState& state, double selection,
                                   int64_t step, const SelectionRule& rule) {
    Packet p{};
    if (comm.rank() == 0) {
        SelectionState s = state;
        const bool better = selection > s.best || (rule.first_is_best && s.best_step < 0);
        const bool tie = !better && rule.later_on_ties && s.best_step >= 0 && selection == s.best;
        if (better || tie) {
            s.best = selection;
            s.best_step = step;
        }
        if (rule.count_patience) {
            if (better)
                s.evals_without_improvement = 0;
            else
                ++s.evals_without_improvement;
        }
        const bool improved = better || tie;
        const bool stop = rule.count_patience && rule.patience > 0 &&
                          s.evals_without_improvement >= rule.patience;
        p = {s.best, s.best_step, s.evals_without_improvement, improved ? 1 : 0, stop ? 1 : 0};
    }
    comm.broadcast(std::as_writable_bytes(std::span<Packet>(&p, 1)), 0);
    state = {p.best, p.best_step, p.evals_without_improvement};
    return {p.improved != 0, p.stop != 0};
}

double broadcast_double(Communicator& comm, double v, int root) {
    comm.broadcast(std::as_writable_bytes(std::span<double>(&v, 1)), root);
    return v;
}

}  // namespace segrank
