// Run by ctest under `mpiexec -n 2`: best-checkpoint and early-stopping decisions are rank 0's on
// every rank, even when the ranks' selection values and states differ (two evaluations less than
// 1e-7 apart, which a 6-decimal broadcast used to round to one value on rank 1 only), and
// broadcast_double carries rank 0's double bit for bit. A failed check throws; run_guarded then
// aborts the job non-zero.
#include <cstdint>
#include <cstdio>
#include <cstring>

#include "gnn/core/check.h"
#include "trainer/comm.h"
#include "trainer/selection.h"

using namespace segrank;

namespace {

#define EXPECT(cond, ...) SEGRANK_CHECK(cond, "check failed: " #cond " " __VA_OPT__(, ) __VA_ARGS__)

bool same_bits(double a, double b) { return std::memcmp(&a, &b, sizeof a) == 0; }

void test_broadcast_double(Communicator& c) {
    const double exact = 0.12345678901234567;  // std::to_string gives "0.123457"
    const double v = broadcast_double(c, c.rank() == 0 ? exact : -1.0, 0);
    EXPECT(same_bits(v, exact), "rank ", c.rank(), " got ", v);
    const double w = broadcast_double(c, c.rank() == 1 ? 5e-324 : 0.0, 1);
    EXPECT(same_bits(w, 5e-324));
}

void test_near_tie_improves_everywhere(Communicator& c) {
    // Best so far 0.1234567 (exact on rank 0, rounded to 0.123457 on rank 1); the new evaluation
    // 0.12345695 is 2.5e-7 better on rank 0 but equal to the rounded best on rank 1.
    SelectionState s{.best = c.rank() == 0 ? 0.1234567 : 0.123457,
                     .best_step = 10,
                     .evals_without_improvement = c.rank() == 0 ? 0 : 3};
    const double sel = c.rank() == 0 ? 0.12345695 : 0.123457;
    const SelectionDecision d =
        decide_selection(c, s, sel, 20, {.patience = 2, .count_patience = true});
    EXPECT(d.improved, "rank ", c.rank(), " did not take rank 0's improvement");
    EXPECT(!d.stop, "rank ", c.rank());
    EXPECT(same_bits(s.best, 0.12345695), "rank ", c.rank(), " best ", s.best);
    EXPECT(s.best_step == 20 && s.evals_without_improvement == 0);
}

void test_patience_is_rank0s(Communicator& c) {
    // Rank 1 believes it improved and has a fresh counter; rank 0 has not improved for 1 of 2.
    SelectionState s{.best = c.rank() == 0 ? 0.5 : 0.1,
                     .best_step = 4,
                     .evals_without_improvement = c.rank() == 0 ? 1 : 0};
    const SelectionDecision d =
        decide_selection(c, s, 0.5 - 1e-9 * c.rank(), 8, {.patience = 2, .count_patience = true});
    EXPECT(!d.improved && d.stop, "rank ", c.rank(), " improved ", d.improved, " stop ", d.stop);
    EXPECT(same_bits(s.best, 0.5) && s.best_step == 4 && s.evals_without_improvement == 2);
    // Final evaluation with no best yet (first_is_best): improved on every rank, no counting.
    SelectionState none{};
    const SelectionDecision f =
        decide_selection(c, none, c.rank() == 0 ? -1e300 : 7.0, 9, {.first_is_best = true});
    EXPECT(f.improved && !f.stop && none.best_step == 9 && same_bits(none.best, -1e300));
}

void test_ties_prefer_later(Communicator& c) {
    // A tie with the best (a saturated score of 1.0): with later_on_ties the later evaluation
    // becomes best, but the patience counter still advances and stops the run at 2.
    SelectionState s{.best = 1.0, .best_step = 50, .evals_without_improvement = 1};
    const SelectionDecision d = decide_selection(
        c, s, 1.0, 100, {.patience = 2, .count_patience = true, .later_on_ties = true});
    EXPECT(d.improved && d.stop, "rank ", c.rank(), " improved ", d.improved, " stop ", d.stop);
    EXPECT(s.best_step == 100 && s.evals_without_improvement == 2 && same_bits(s.best, 1.0));
    // Without it the earlier one stays; a strictly better value resets the counter either way.
    SelectionState e{.best = 1.0, .best_step = 50, .evals_without_improvement = 0};
    const SelectionDecision f =
        decide_selection(c, e, 1.0, 100, {.patience = 3, .count_patience = true});
    EXPECT(!f.improved && !f.stop && e.best_step == 50 && e.evals_without_improvement == 1);
    const SelectionDecision g = decide_selection(
        c, e, 1.5, 150, {.patience = 3, .count_patience = true, .later_on_ties = true});
    EXPECT(g.improved && e.best_step == 150 && e.evals_without_improvement == 0);
    // A lower value is no tie.
    const SelectionDecision h = decide_selection(c, e, 1.25, 200, {.later_on_ties = true});
    EXPECT(!h.improved && e.best_step == 150);
}

}  // namespace

int main(int argc, char** argv) {
    auto comm = make_communicator(&argc, &argv);
    return run_guarded(*comm, "", [&] {
        test_broadcast_double(*comm);
        test_near_tie_improves_everywhere(*comm);
        test_patience_is_rank0s(*comm);
        test_ties_prefer_later(*comm);
        comm->barrier();
        if (comm->rank() == 0)
            std::printf("selection: all checks passed on %d ranks\n", comm->size());
        return 0;
    });
}
