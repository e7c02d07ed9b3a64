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

// "line 3: 'a' here, 'b' on rank 0" for the first line where `mine` and `root` differ.
std::string first_difference(const std::string& mine, const std::string& root) {
    const auto a = lines_of(mine), b = lines_of(root);
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        const std::string x = i < a.size() ? "'" + a[i] + "'" : "(nothing)";
        const std::string y = i < b.size() ? "'" + b[i] + "'" : "(nothing)";
        if (x != y) return str("line ", i + 1, ": ", x, " here, ", y, " on rank 0");
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
    const std::string root_text = comm.broadcast(text, 0);  // lengths may differ: safe here
    if (differs[static_cast<size_t>(comm.rank())] != 0.0)
        throw Error(str("ranks disagree: the ", what, " of rank ", comm.rank(),
                        " differs from rank 0's (", first_difference(text, root_text),
                        "); every rank must run the same config on the same data"));
    throw Error(str("ranks disagree: the ", what, " of rank(s) ", ranks,
                    " differs from rank 0's (see their messages); every rank must run the same "
                    "config on the same data"));
}

}  // namespace segrank
