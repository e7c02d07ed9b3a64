// LocalCommunicator semantics (docs/architecture.md#distribution): a 1-rank job whose collectives
// are identities, the top-level guard and the failure-injection hook. MPI behaviour is tested in
// tests/mpi/.
#include "trainer/comm.h"

#include <doctest/doctest.h>

#include <cstdlib>
#include <vector>

#include "gnn/core/check.h"

using namespace segrank;

TEST_CASE("LocalCommunicator is rank 0 of 1 and its reductions leave data unchanged") {
    LocalCommunicator comm;
    CHECK(comm.rank() == 0);
    CHECK(comm.size() == 1);
    CHECK(comm.local_rank() == 0);
    CHECK(comm.local_size() == 1);
    CHECK(comm.backend() == "local");
    std::vector<float> g = {1.5f, -2.0f, 3.25f};
    comm.allreduce_sum(std::span<float>(g));
    CHECK(g == std::vector<float>{1.5f, -2.0f, 3.25f});
    std::vector<double> d = {0.5, 7.0};
    comm.allreduce_sum(std::span<double>(d));
    comm.allreduce_max(std::span<double>(d));
    CHECK(d == std::vector<double>{0.5, 7.0});
    CHECK(comm.allreduce_sum(2.5) == 2.5);
    CHECK(comm.allreduce_max(-1.0) == -1.0);
    comm.barrier();
}

TEST_CASE("LocalCommunicator broadcast from root 0 keeps the data, another root is an error") {
    LocalCommunicator comm;
    std::vector<float> p = {1, 2, 3};
    comm.broadcast(std::span<float>(p), 0);
    CHECK(p == std::vector<float>{1, 2, 3});
    CHECK(comm.broadcast(std::string("config text"), 0) == "config text");
    CHECK(comm.broadcast(std::string(), 0).empty());
    CHECK_THROWS_WITH_AS(comm.broadcast(std::span<float>(p), 1),
                         "broadcast/gather root 1 is not a rank of a 1-process job (valid: 0)",
                         Error);
}

TEST_CASE("LocalCommunicator gather returns this rank's vector at index 0") {
    LocalCommunicator comm;
    const std::vector<double> mine = {1.0, 2.0};
    const auto all = comm.gather(mine, 0);
    REQUIRE(all.size() == 1);
    CHECK(all[0] == mine);
    CHECK_THROWS_AS(comm.gather(mine, 2), Error);
}

TEST_CASE("make_communicator outside mpirun gives the local communicator") {
    REQUIRE_FALSE(launched_by_mpi());
    int argc = 1;
    char name[] = "test";
    char* args[] = {name, nullptr};
    char** argv = args;
    auto comm = make_communicator(&argc, &argv);
    CHECK(comm->backend() == "local");
    CHECK(comm->size() == 1);
    CHECK(argc == 1);
}

TEST_CASE("run_guarded returns the body's code, or 1 / 3 for segrank::Error / other exceptions") {
    LocalCommunicator comm;
    CHECK(run_guarded(comm, "train", [] { return 0; }) == 0);
    CHECK(run_guarded(comm, "train", [] { return 5; }) == 5);
    CHECK(run_guarded(comm, "train", []() -> int { throw Error("bad input"); }) == 1);
    CHECK(run_guarded(comm, "train", []() -> int { throw std::runtime_error("bug"); }) == 3);
}

TEST_CASE("inject_failure_if_requested throws only on the chosen rank and step") {
    CHECK_NOTHROW(inject_failure_if_requested(-1, 0, 0, 0));
    CHECK_NOTHROW(inject_failure_if_requested(1, 3, 0, 3));
    CHECK_NOTHROW(inject_failure_if_requested(1, 3, 1, 2));
    CHECK_THROWS_WITH_AS(inject_failure_if_requested(1, 3, 1, 3),
                         "injected failure on rank 1 at step 3 (dist.fail_rank test hook)", Error);
}
