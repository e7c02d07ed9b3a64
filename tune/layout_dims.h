// The dims lists of layout slots, shared by the files of the search space (tune/candidates.h):
// the table of arrangements of 0..r-1 and how a slot's 18 values list them. Internal to tune/.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace segrank::tune {

// The lists of len distinct dims of 0..rank-1, lexicographic (0 <= len <= rank <= 6; unchecked).
const std::vector<std::vector<int8_t>>& arrangements(int rank, int len);

// Position of `dims` in arrangements(rank, dims.size()) (it must be there).
int32_t arrangement_index(int rank, std::span<const int8_t> dims);

// "{1,0}" for the dims {1, 0}.
std::string dims_text(std::span<const int8_t> dims);

// Length of the dims list tensor t of one node's 18 values gives (its entries before the first -1).
int listed_dims(const int8_t* values, int t);

}  // namespace segrank::tune
