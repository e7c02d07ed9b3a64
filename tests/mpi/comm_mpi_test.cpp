// Run by ctest under `mpiexec -n 2`: the MPI Communicator's collectives give the results of their
// definitions (sums, maxima, root's data everywhere, per-rank vectors at the root). A failed check
// throws; run_guarded then prints the rank and aborts the whole job with a non-zero code.
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "gnn/core/check.h"
#include "trainer/comm.h"

using namespace segrank;

namespace {

#define EXPECT(cond, ...) SEGRANK_CHECK(cond, "check failed: " #cond " " __VA_OPT__(, ) __VA_ARGS__)

void test_identity(Communicator& c) {
    EXPECT(c.backend() == "mpi");
    EXPECT(c.size() == 2, "size ", c.size());
    EXPECT(c.rank() >= 0 && c.rank() < c.size());
    // One machine: every rank is local.
    EXPECT(c.local_size() == c.size(), "local_size ", c.local_size());
    EXPECT(c.local_rank() == c.rank(), "local_rank ", c.local_rank());
}

void test_allreduce(Communicator& c) {
    const int r = c.rank(), n = c.size();
    // Odd length above any internal chunk of small messages; values exact in float.
    std::vector<float> g(1000003);
    for (size_t i = 0; i < g.size(); ++i)
        g[i] = static_cast<float>((r + 1) * static_cast<int>(i % 1000)) + 0.5f;
    c.allreduce_sum(std::span<float>(g));
    const int rank_sum = n * (n + 1) / 2;
    for (size_t i = 0; i < g.size(); ++i) {
        const float want = static_cast<float>(rank_sum * static_cast<int>(i % 1000)) +
                           0.5f * static_cast<float>(n);
        EXPECT(g[i] == want, "float allreduce at ", i, ": ", g[i], " != ", want);
    }
    std::vector<double> d = {1.0 * r, 0.25, -3.0 * (r + 1)};
    c.allreduce_sum(std::span<double>(d));
    EXPECT(d[0] == n * (n - 1) / 2.0 && d[1] == 0.25 * n && d[2] == -3.0 * rank_sum);
    EXPECT(c.allreduce_sum(1.5) == 1.5 * n);
    EXPECT(c.allreduce_max(static_cast<double>(r) * 10.0) == 10.0 * (n - 1));
    std::vector<double> m = {static_cast<double>(-r), static_cast<double>(r)};
    c.allreduce_max(std::span<double>(m));
    EXPECT(m[0] == 0.0 && m[1] == n - 1.0);
    std::vector<float> empty;
    c.allreduce_sum(std::span<float>(empty));
}

void test_broadcast(Communicator& c) {
    const int r = c.rank(), root = c.size() - 1;
    std::vector<float> p(4097);
    for (size_t i = 0; i < p.size(); ++i) p[i] = r == root ? static_cast<float>(i) * 0.5f : -1.0f;
    c.broadcast(std::span<float>(p), root);
    for (size_t i = 0; i < p.size(); ++i)
        EXPECT(p[i] == static_cast<float>(i) * 0.5f, "broadcast at ", i);
    std::vector<std::byte> b(3, std::byte{static_cast<unsigned char>(r)});
    c.broadcast(std::span<std::byte>(b), 0);
    for (auto x : b) EXPECT(x == std::byte{0});
    // Lengths differ before the call: the root's string wins everywhere.
    const std::string mine = r == root ? std::string("[optim]\nlr = 0.5\n") : std::string("x");
    EXPECT(c.broadcast(mine, root) == "[optim]\nlr = 0.5\n");
    bool threw = false;
    try {
        c.broadcast(std::span<float>(p), c.size());
    } catch (const Error&) {
        threw = true;  // checked before any MPI call, identically on every rank: no hang
    }
    EXPECT(threw, "broadcast with root = size must throw");
}

void test_gather(Communicator& c) {
    const int r = c.rank();
    std::vector<double> mine(static_cast<size_t>(r + 1));
    std::iota(mine.begin(), mine.end(), 10.0 * r);
    const auto all = c.gather(mine, 0);
    if (r == 0) {
        EXPECT(static_cast<int>(all.size()) == c.size());
        for (int k = 0; k < c.size(); ++k) {
            EXPECT(static_cast<int>(all[k].size()) == k + 1, "gather rank ", k);
            for (int j = 0; j <= k; ++j) EXPECT(all[k][j] == 10.0 * k + j);
        }
    } else {
        EXPECT(all.empty());
    }
}

}  // namespace

int main(int argc, char** argv) {
    auto comm = make_communicator(&argc, &argv);
    return run_guarded(*comm, "", [&] {
        test_identity(*comm);
        test_allreduce(*comm);
        test_broadcast(*comm);
        test_gather(*comm);
        comm->barrier();
        if (comm->rank() == 0)
            std::printf("mpi communicator: all checks passed on %d ranks\n", comm->size());
        return 0;
    });
}
