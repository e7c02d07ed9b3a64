// check_ranks_agree (see rank_agreement.h).
#include "trainer/rank_agreement.h"

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <sstream>
#include <vector>

#include "gnn/core/check.h"
#include "gnn/core/hash.h"

namespace segrank {

namespace {

uint64_t fnv1a(const std::string& s) { return segrank::fnv1a(s.data(), s.size()); }

// Lines of `text` without trailing comments, for the message only (the hash covers the bytes).
std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream is(text);
    for (std::string line; std::getline(is, line);) {
        // A trailing "  # comment" (the config dump's) is noise in the message.
        if (const auto c = line.find(" #"); c != std::string::npos) line.resize(c);
        while (!line.empty() && line.back() == ' ') line.pop_back();
        out.push_back(line);
    }
    return out;
}

// "line 3: 'a' on rank 2, 'b' on rank 0" for the first line where `other` (rank `rank`'s text)
// and `root` (rank 0's) differ.
std::string first_difference(const std::string& other, int rank, const std::string& root) {
    const auto a = lines_of(other), b = lines_of(root);
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        const std::string x = i < a.size() ? "'" + a[i] + "'" : "(nothing)";
        const std::string y = i < b.size() ? "'" + b[i] + "'" : "(nothing)";
        if (x != y) return str("line ", i + 1, ": ", x, " on rank ", rank, ", ", y, " on rank 0");
    }
    return "same lines, other bytes";
}

}  // namespace

void check_ranks_agree(Communicator& comm, const std::string& what, const std::string& text) {
    if (comm.size() <= 1) return;
    uint64_t root_hash = fnv1a(text);
    comm.broadcast(std::as_writable_bytes(std::span<uint64_t>(&root_hash, 1)), 0);
    std::vector<double> differs(static_cast<size_t>(comm.size()), 0.0);
    differs[static_cast<size_t>(comm.rank())] = fnv1a(text) != root_hash ? 1.0 : 0.0;
    comm.allreduce_sum(std::span<double>(differs));
    std::string ranks;
    for (size_t r = 0; r < differs.size(); ++r)
        if (differs[r] != 0.0) ranks += (ranks.empty() ? "" : ", ") + std::to_string(r);
    if (ranks.empty()) return;
    // Every rank learns rank 0's text and the first differing rank's, and throws the same message:
    // each rank aborts the job once it has printed, so a detail printed by one rank only may never
    // show (lengths may differ: the string broadcast sends the length first).
    int first = 0;
    while (differs[static_cast<size_t>(first)] == 0.0) ++first;
    const std::string root_text = comm.broadcast(text, 0);
    const std::string first_text = comm.broadcast(text, first);
    throw Error(str("ranks disagree: the ", what, " of rank(s) ", ranks, " differs from rank 0's (",
                    first_difference(first_text, first, root_text),
                    "); every rank must run the same config on the same data"));
}

}  // namespace segrank
