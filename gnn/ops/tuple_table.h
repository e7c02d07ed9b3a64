// The numbering of class tuples of the grouped class readout (class_readout_forward): a table that
// numbers pairs of small integers densely in order of first occurrence.
#pragma once
#include <bit>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace segrank {

/// Numbers pairs (t, c) densely in order of first occurrence, at most cap of them: indexed by the
/// key t * c_count + c directly when every key fits the table, else open addressing on the key.
/// Holds at most cap entries at a time; each call clears the slots it used.
class TupleTable {
public:
    /// A table for at most cap pairs at a time.
    explicit TupleTable(int64_t cap) {
        size_t s = 64;
        while (s < static_cast<size_t>(4 * (cap + 1))) s *= 2;
        id_.assign(s, -1);
        key_.resize(s);
        shift_ = 64 - std::countr_zero(s);
        used_.reserve(static_cast<size_t>(cap));
    }

    /// next[k] = number of the pair (cur[k], c[k]), k < kn (cur[k] < t_count, c[k] < c_count);
    /// rep[n] = the first k numbered n. Returns the count, or -1 as soon as it would pass cap (next
    /// and rep then hold a prefix).
    int64_t number(const int32_t* cur, int64_t t_count, const int32_t* c, int64_t c_count,
                   int64_t kn, int64_t cap, int32_t* next, std::vector<int32_t>& rep) {
        rep.clear();
        const bool direct = static_cast<uint64_t>(t_count) * static_cast<uint64_t>(c_count) <=
                            static_cast<uint64_t>(id_.size());
        const int64_t n = direct ? number_direct(cur, c, c_count, kn, cap, next, rep)
                                 : number_hashed(cur, c, c_count, kn, cap, next, rep);
        for (const size_t s : used_) id_[s] = -1;
        used_.clear();
        return n;
    }

private:
    int64_t number_direct(const int32_t* cur, const int32_t* c, int64_t c_count, int64_t kn,
                          int64_t cap, int32_t* next, std::vector<int32_t>& rep) {
        int32_t n = 0;
        for (int64_t k = 0; k < kn; ++k) {
            const size_t key = static_cast<size_t>(cur[k]) * static_cast<size_t>(c_count) +
                               static_cast<size_t>(c[k]);
            int32_t id = id_[key];
            if (id < 0) {
                if (n == cap) return -1;
                id = id_[key] = n++;
                used_.push_back(key);
                rep.push_back(static_cast<int32_t>(k));
            }
            next[k] = id;
        }
        return n;
    }

    int64_t number_hashed(const int32_t* cur, const int32_t* c, int64_t c_count, int64_t kn,
                          int64_t cap, int32_t* next, std::vector<int32_t>& rep) {
        const size_t mask = id_.size() - 1;
        int32_t n = 0;
        for (int64_t k = 0; k < kn; ++k) {
            const uint64_t key = static_cast<uint64_t>(cur[k]) * static_cast<uint64_t>(c_count) +
                                 static_cast<uint64_t>(c[k]);
            size_t s = static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> shift_);
            while (id_[s] >= 0 && key_[s] != key) s = (s + 1) & mask;
            int32_t id = id_[s];
            if (id < 0) {
                if (n == cap) return -1;
                id = id_[s] = n++;
                key_[s] = key;
                used_.push_back(s);
                rep.push_back(static_cast<int32_t>(k));
            }
            next[k] = id;
        }
        return n;
    }

    std::vector<int32_t> id_;
    std::vector<uint64_t> key_;
    std::vector<size_t> used_;
    int shift_ = 0;
};

}  // namespace segrank
