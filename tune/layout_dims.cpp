// The dims lists of layout slots: permutations and arrangements of 0..r-1 (tune/layout_dims.h,
// tune/candidates.h).
#include "tune/layout_dims.h"

#include <algorithm>
#include <sstream>

#include "gnn/core/check.h"
#include "tune/candidates.h"

namespace segrank::tune {

namespace {

// table[r][len]: the lists of len distinct dims of 0..r-1, lexicographic. Truncating the
// lexicographic permutations of 0..r-1 to len entries gives them in order, each repeated.
std::vector<std::vector<std::vector<std::vector<int8_t>>>> all_arrangements() {
    std::vector<std::vector<std::vector<std::vector<int8_t>>>> out(kMaxLayoutRank + 1);
    for (int r = 0; r <= kMaxLayoutRank; ++r) {
        out[static_cast<size_t>(r)].resize(static_cast<size_t>(r + 1));
        std::vector<int8_t> p;
        for (int d = 0; d < r; ++d) p.push_back(static_cast<int8_t>(d));
        do {
            for (int len = 0; len <= r; ++len) {
                auto& list = out[static_cast<size_t>(r)][static_cast<size_t>(len)];
                std::vector<int8_t> head(p.begin(), p.begin() + len);
                if (list.empty() || list.back() != head) list.push_back(std::move(head));
            }
        } while (std::next_permutation(p.begin(), p.end()));
    }
    return out;
}

int64_t factorial(int r) {
    int64_t f = 1;
    for (int i = 2; i <= r; ++i) f *= i;
    return f;
}

}  // namespace

const std::vector<std::vector<int8_t>>& arrangements(int rank, int len) {
    static const auto table = all_arrangements();
    return table[static_cast<size_t>(rank)][static_cast<size_t>(len)];
}

// Position of `dims` in arrangements(rank, dims.size()) (it must be there).
int32_t arrangement_index(int rank, std::span<const int8_t> dims) {
    const auto& list = arrangements(rank, static_cast<int>(dims.size()));
    const std::vector<int8_t> key(dims.begin(), dims.end());
    const auto it = std::lower_bound(list.begin(), list.end(), key);
    SEGRANK_ASSERT(it != list.end() && *it == key);
    return static_cast<int32_t>(it - list.begin());
}

std::string dims_text(std::span<const int8_t> dims) {
    std::ostringstream os;
    os << '{';
    for (size_t i = 0; i < dims.size(); ++i) os << (i ? "," : "") << static_cast<int>(dims[i]);
    os << '}';
    return os.str();
}

// Length of the dims list tensor t of one node's 18 values gives (its entries before the first -1).
int listed_dims(const int8_t* values, int t) {
    int len = 0;
    while (len < 6 && values[t * 6 + len] != -1) ++len;
    return len;
}

const std::vector<std::vector<int8_t>>& layout_permutations(int rank) {
    SEGRANK_CHECK(rank >= 0 && rank <= kMaxLayoutRank, "layout tensor rank ", rank,
                  " out of range 0..", kMaxLayoutRank);
    return arrangements(rank, rank);
}

const std::vector<std::vector<int8_t>>& layout_arrangements(int rank, int len) {
    SEGRANK_CHECK(rank >= 0 && rank <= kMaxLayoutRank && len >= 0 && len <= rank,
                  "layout dims list of ", len, " dims of a rank-", rank,
                  " tensor: expected 0 <= len <= rank <= ", kMaxLayoutRank);
    return arrangements(rank, len);
}

int64_t num_layout_permutations(int rank) {
    SEGRANK_CHECK(rank >= 0 && rank <= kMaxLayoutRank, "layout tensor rank ", rank,
                  " out of range 0..", kMaxLayoutRank);
    return factorial(rank);
}

bool is_permutation(std::span<const int8_t> dims) {
    std::vector<bool> seen(dims.size(), false);
    for (int8_t d : dims) {
        if (d < 0 || static_cast<size_t>(d) >= dims.size() || seen[static_cast<size_t>(d)])
            return false;
        seen[static_cast<size_t>(d)] = true;
    }
    return true;
}

}  // namespace segrank::tune
