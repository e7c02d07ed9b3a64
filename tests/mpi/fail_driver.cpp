// Failure test driver (docs/architecture.md#distribution), run under `mpiexec -n 2` by
// expect_abort.sh: rank 1 throws at step 2 (dist.fail_rank hook) while rank 0 is already inside the
// step's allreduce. The whole job must end with a non-zero code within seconds, naming the failed
// rank.
#include <cstdio>
#include <vector>

#include "trainer/comm.h"

using namespace segrank;

int main(int argc, char** argv) {
    auto comm = make_communicator(&argc, &argv);
    return run_guarded(*comm, "train", [&] {
        std::vector<float> grads(1024, 1.0f);
        for (int64_t step = 0; step < 1000000; ++step) {
            inject_failure_if_requested(/*fail_rank=*/1, /*fail_step=*/2, comm->rank(), step);
            comm->allreduce_sum(std::span<float>(grads));
        }
        return 0;  // not reached when the hook fires
    });
}
