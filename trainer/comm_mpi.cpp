// MpiCommunicator over Open MPI: the only <mpi.h> includer (docs/architecture.md#distribution),
// compiled only with SEGRANK_WITH_MPI. MPI errors are returned (MPI_ERRORS_RETURN) and converted to
// segrank::Error here. The C API only: without these Open MPI's mpi.h also pulls in the removed C++
// bindings (libmpi_cxx).
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <thread>

#include "gnn/core/check.h"
#include "trainer/comm.h"

namespace segrank {
namespace {

/// Largest element count passed to one MPI call (counts are int).
constexpr size_t kMaxChunk = size_t{1} << 30;

class MpiCommunicator final : public Communicator {
public:
    MpiCommunicator(int* argc, char*** argv) {
        int finalized = 0;
        MPI_Finalized(&finalized);
        SEGRANK_CHECK(!finalized,
                      "MPI was already finalized in this process: make_communicator can be "
                      "called only once per process");
        int initialized = 0;
        MPI_Initialized(&initialized);
        if (!initialized) {
            int provided = 0;
            const int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
            SEGRANK_CHECK(rc == MPI_SUCCESS, "MPI_Init_thread failed: ", error_string(rc));
            owns_mpi_ = true;
        }
        check(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
              "MPI_Comm_set_errhandler");
        // A private duplicate, so our collectives never match a library's on MPI_COMM_WORLD.
        check(MPI_Comm_dup(MPI_COMM_WORLD, &comm_), "MPI_Comm_dup");
        check(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN), "MPI_Comm_set_errhandler");
        check(MPI_Comm_rank(comm_, &rank_), "MPI_Comm_rank");
        check(MPI_Comm_size(comm_, &size_), "MPI_Comm_size");
        MPI_Comm node = MPI_COMM_NULL;
        check(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &node),
              "MPI_Comm_split_type(shared)");
        check(MPI_Comm_rank(node, &local_rank_), "MPI_Comm_rank(node)");
        check(MPI_Comm_size(node, &local_size_), "MPI_Comm_size(node)");
        MPI_Comm_free(&node);
    }

    MpiCommunicator(const MpiCommunicator&) = delete;
    MpiCommunicator& operator=(const MpiCommunicator&) = delete;

    ~MpiCommunicator() override {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (finalized) return;
        if (comm_ != MPI_COMM_NULL) MPI_Comm_free(&comm_);
        if (owns_mpi_) MPI_Finalize();
    }

    int rank() const override { return rank_; }
    int size() const override { return size_; }
    int local_rank() const override { return local_rank_; }
    int local_size() const override { return local_size_; }
    std::string_view backend() const override { return "mpi"; }

    using Communicator::allreduce_max;
    using Communicator::allreduce_sum;
    using Communicator::broadcast;

    void allreduce_sum(std::span<float> data) override {
        allreduce(data.data(), data.size(), MPI_FLOAT, MPI_SUM);
    }
    void allreduce_sum(std::span<double> data) override {
        allreduce(data.data(), data.size(), MPI_DOUBLE, MPI_SUM);
    }
    void allreduce_max(std::span<double> data) override {
        allreduce(data.data(), data.size(), MPI_DOUBLE, MPI_MAX);
    }

    void broadcast(std::span<float> data, int root) override {
        bcast(data.data(), data.size(), MPI_FLOAT, root);
    }
    void broadcast(std::span<std::byte> data, int root) override {
        bcast(data.data(), data.size(), MPI_BYTE, root);
    }

    std::vector<std::vector<double>> gather(std::span<const double> local, int root) override {
        check_root(root, "gather");
        SEGRANK_CHECK(local.size() <= static_cast<size_t>(INT_MAX), "gather of ", local.size(),
                      " values is too large (max ", INT_MAX, ")");
        const int n = static_cast<int>(local.size());
        std::vector<int> counts(rank_ == root ? size_ : 0);
        check(MPI_Gather(&n, 1, MPI_INT, counts.data(), 1, MPI_INT, root, comm_),
              "MPI_Gather(counts)");
        std::vector<int> displs(counts.size());
        int64_t total = 0;
        for (size_t r = 0; r < counts.size(); ++r) {
            SEGRANK_CHECK(total + counts[r] <= INT_MAX, "gather of more than ", INT_MAX,
                          " values in total");
            displs[r] = static_cast<int>(total);
            total += counts[r];
        }
        std::vector<double> all(static_cast<size_t>(total));
        check(MPI_Gatherv(local.data(), n, MPI_DOUBLE, all.data(), counts.data(), displs.data(),
                          MPI_DOUBLE, root, comm_),
              "MPI_Gatherv");
        std::vector<std::vector<double>> out;
        for (size_t r = 0; r < counts.size(); ++r)
            out.emplace_back(all.begin() + displs[r], all.begin() + displs[r] + counts[r]);
        return out;
    }

    void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }

    bool barrier_within(double seconds) override {
        MPI_Request req = MPI_REQUEST_NULL;
        check(MPI_Ibarrier(comm_, &req), "MPI_Ibarrier");
        const auto deadline =
            std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
        while (true) {
            int done = 0;
            check(MPI_Test(&req, &done, MPI_STATUS_IGNORE), "MPI_Test");
            if (done) return true;
            if (std::chrono::steady_clock::now() >= deadline) return false;
            std::this_thread::sleep_for(std::chrono::milliseconds(2));
        }
    }

    [[noreturn]] void abort(int code) override {
        std::fflush(stdout);
        std::fflush(stderr);
        MPI_Abort(MPI_COMM_WORLD, code);
        std::_Exit(code);  // MPI_Abort does not return in Open MPI; be certain anyway
    }

private:
    static std::string error_string(int rc) {
        char buf[MPI_MAX_ERROR_STRING];
        int len = 0;
        if (MPI_Error_string(rc, buf, &len) != MPI_SUCCESS) return str("MPI error code ", rc);
        return std::string(buf, static_cast<size_t>(len));
    }

    void check(int rc, const char* what) const {
        if (rc != MPI_SUCCESS)
            throw Error(
                str(what, " failed on rank ", rank_, " of ", size_, ": ", error_string(rc)));
    }

    void check_root(int root, const char* what) const {
        SEGRANK_CHECK(root >= 0 && root < size_, what, " root ", root, " is not a rank (valid: 0..",
                      size_ - 1, ")");
    }

    template <typename T>
    void allreduce(T* data, size_t n, MPI_Datatype type, MPI_Op op) {
        for (size_t off = 0; off < n; off += kMaxChunk) {
            const int count = static_cast<int>(std::min(kMaxChunk, n - off));
            check(MPI_Allreduce(MPI_IN_PLACE, data + off, count, type, op, comm_), "MPI_Allreduce");
        }
    }

    template <typename T>
    void bcast(T* data, size_t n, MPI_Datatype type, int root) {
        check_root(root, "broadcast");
        for (size_t off = 0; off < n; off += kMaxChunk) {
            const int count = static_cast<int>(std::min(kMaxChunk, n - off));
            check(MPI_Bcast(data + off, count, type, root, comm_), "MPI_Bcast");
        }
    }

    MPI_Comm comm_ = MPI_COMM_NULL;
    int rank_ = 0;
    int size_ = 1;
    int local_rank_ = 0;
    int local_size_ = 1;
    bool owns_mpi_ = false;
};

}  // namespace

std::unique_ptr<Communicator> make_mpi_communicator(int* argc, char*** argv) {
    return std::make_unique<MpiCommunicator>(argc, argv);
}

}  // namespace segrank
