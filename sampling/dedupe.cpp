// Grouping of identical config rows for training (DESIGN.md 3, sampling.dedupe).
#include "sampling/dedupe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "gnn/core/check.h"

namespace segrank {

DedupeMode parse_dedupe_mode(std::string_view name) {
    if (name == "min") return DedupeMode::kMin;
    if (name == "mean") return DedupeMode::kMean;
    if (name == "keep") return DedupeMode::kKeep;
    throw Error(str("unknown sampling.dedupe \"", name, "\": expected one of min, mean, keep"));
}

ConfigSet dedupe_configs(std::span<const int8_t> rows, int64_t row_bytes,
                         std::span<const double> runtimes, DedupeMode mode) {
    SEGRANK_CHECK(row_bytes >= 0, "dedupe: row_bytes must be >= 0, got ", row_bytes);
    const auto c = static_cast<int64_t>(runtimes.size());
    SEGRANK_CHECK(static_cast<int64_t>(rows.size()) == c * row_bytes, "dedupe: ", rows.size(),
                  " config bytes for ", c, " runtimes of ", row_bytes, " bytes each");
    ConfigSet out;
    if (mode == DedupeMode::kKeep) {
        out.indices.resize(static_cast<size_t>(c));
        for (int64_t i = 0; i < c; ++i) out.indices[i] = i;
        out.targets.assign(runtimes.begin(), runtimes.end());
        return out;
    }
    // Key: the row's bytes viewed in place (no copies). Groups are numbered in order of first row.
    std::unordered_map<std::string_view, int64_t> group_of;
    group_of.reserve(static_cast<size_t>(c));
    std::vector<int64_t> count;
    const char* base = reinterpret_cast<const char*>(rows.data());
    for (int64_t i = 0; i < c; ++i) {
        const std::string_view key(base + i * row_bytes, static_cast<size_t>(row_bytes));
        auto [it, inserted] = group_of.try_emplace(key, out.size());
        if (inserted) {
            out.indices.push_back(i);
            out.targets.push_back(runtimes[i]);
            count.push_back(1);
        } else {
            const int64_t g = it->second;
            if (mode == DedupeMode::kMin) {
                out.targets[g] = std::min(out.targets[g], runtimes[i]);
            } else {
                out.targets[g] += runtimes[i];
                ++count[g];
            }
        }
    }
    if (mode == DedupeMode::kMean)
        for (size_t g = 0; g < out.targets.size(); ++g)
            out.targets[g] /= static_cast<double>(count[g]);
    return out;
}

ConfigSet dedupe_configs(ConstMatrixView rows, std::span<const double> runtimes, DedupeMode mode) {
    SEGRANK_CHECK(rows.rows == static_cast<int64_t>(runtimes.size()), "dedupe: ", rows.rows,
                  " config rows but ", runtimes.size(), " runtimes");
    // Canonical bytes per row: -0 becomes +0 so equal numbers give equal keys; NaN is refused.
    const int64_t row_bytes = rows.cols * static_cast<int64_t>(sizeof(float));
    std::vector<int8_t> bytes(static_cast<size_t>(rows.rows * row_bytes));
    for (int64_t r = 0; r < rows.rows; ++r) {
        for (int64_t j = 0; j < rows.cols; ++j) {
            float v = rows.at(r, j);
            SEGRANK_CHECK(!std::isnan(v), "dedupe: config row ", r, " column ", j, " is NaN");
            if (v == 0.0f) v = 0.0f;
            std::memcpy(bytes.data() + r * row_bytes + j * 4, &v, sizeof(float));
        }
    }
    return dedupe_configs(bytes, row_bytes, runtimes, mode);
}

ConfigSet dedupe_configs(std::span<const int8_t> rows, int64_t row_bytes,
                         std::span<const int64_t> runtimes_ns, DedupeMode mode) {
    const std::vector<double> t(runtimes_ns.begin(), runtimes_ns.end());
    return dedupe_configs(rows, row_bytes, t, mode);
}

}  // namespace segrank
