// LocalCommunicator, the Communicator helpers shared by every backend, make_communicator and the
// top-level guard that turns an exception on any rank into the end of the whole job.
#include "trainer/comm.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>

#include "gnn/core/check.h"
#include "util/exit_status.h"

namespace segrank {

double Communicator::allreduce_sum(double value) {
    allreduce_sum(std::span<double>(&value, 1));
    return value;
}

double Communicator::allreduce_max(double value) {
    allreduce_max(std::span<double>(&value, 1));
    return value;
}

std::string Communicator::broadcast(const std::string& text, int root) {
    // Two broadcasts: the length (8 bytes), then the bytes.
    uint64_t n = text.size();
    broadcast(std::as_writable_bytes(std::span<uint64_t>(&n, 1)), root);
    std::string out = rank() == root ? text : std::string(n, '\0');
    broadcast(std::as_writable_bytes(std::span<char>(out.data(), out.size())), root);
    return out;
}

namespace {
void check_local_root(int root) {
    SEGRANK_CHECK(root == 0, "broadcast/gather root ", root,
                  " is not a rank of a 1-process job (valid: 0)");
}
}  // namespace

void LocalCommunicator::broadcast(std::span<float>, int root) { check_local_root(root); }
void LocalCommunicator::broadcast(std::span<std::byte>, int root) { check_local_root(root); }

std::vector<std::vector<double>> LocalCommunicator::gather(std::span<const double> local,
                                                           int root) {
    check_local_root(root);
    return {std::vector<double>(local.begin(), local.end())};
}

void LocalCommunicator::abort(int code) {
    std::fflush(stdout);
    std::fflush(stderr);
    std::_Exit(code);
}

bool launched_by_mpi() {
    for (const char* var : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"})
        if (std::getenv(var)) return true;
    return false;
}

std::unique_ptr<Communicator> make_communicator([[maybe_unused]] int* argc,
                                                [[maybe_unused]] char*** argv) {
#ifdef SEGRANK_WITH_MPI
    if (launched_by_mpi()) return make_mpi_communicator(argc, argv);
#endif
    return std::make_unique<LocalCommunicator>();
}

int run_guarded(Communicator& comm, std::string_view command, const std::function<int()>& body) {
    ExitReport r;
    try {
        return body();
    } catch (...) {
        r = classify_exception(std::current_exception());
    }
    const int code = r.code;
    const std::string who = command.empty() ? "segrank" : "segrank " + std::string(command);
    if (comm.size() > 1)  // which rank failed matters only when there are several
        std::fprintf(stderr, "%s [rank %d/%d]: %s\n", who.c_str(), comm.rank(), comm.size(),
                     r.message.c_str());
    else
        std::fprintf(stderr, "%s: %s\n", who.c_str(), r.message.c_str());
    std::fflush(stderr);
    if (comm.size() > 1) comm.abort(code);  // the other ranks may be inside a collective
    return code;
}

void inject_failure_if_requested(int fail_rank, int64_t fail_step, int rank, int64_t step) {
    if (fail_rank >= 0 && rank == fail_rank && step == fail_step)
        throw Error(str("injected failure on rank ", rank, " at step ", step,
                        " (dist.fail_rank test hook)"));
}

}  // namespace segrank
