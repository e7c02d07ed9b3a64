// Grouping of identical config rows for training (docs/sampling.md#duplicate-configurations,
// sampling.dedupe).
#include "sampling/dedupe.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <string_view>
#include <unordered_map>

#include "gnn/core/check.h"

namespace segrank {
namespace {

// group_of[i] = first row equal to row i. Rows are viewed in place as byte strings (no copies).
std::vector<int64_t> group_rows(std::span<const int8_t> rows, int64_t row_bytes, int64_t c) {
    SEGRANK_CHECK(row_bytes >= 0, "dedupe: row_bytes must be >= 0, got ", row_bytes);
    SEGRANK_CHECK(c >= 0 && static_cast<int64_t>(rows.size()) == c * row_bytes,
                  "dedupe: ", rows.size(), " config bytes for ", c, " configs of ", row_bytes,
                  " bytes each");
    std::unordered_map<std::string_view, int64_t> first_of;
    first_of.reserve(static_cast<size_t>(c));
    std::vector<int64_t> group(static_cast<size_t>(c));
    const char* base = reinterpret_cast<const char*>(rows.data());
    for (int64_t i = 0; i < c; ++i) {
        const std::string_view key(base + i * row_bytes, static_cast<size_t>(row_bytes));
        group[i] = first_of.try_emplace(key, i).first->second;
    }
    return group;
}

// Canonical bytes of float rows: -0 becomes +0 so equal numbers give equal keys; NaN is refused.
std::vector<int8_t> canonical_bytes(ConstMatrixView rows) {
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
    return bytes;
}

ConfigSet reduce_groups(std::span<const int64_t> group, std::span<const double> runtimes,
                        DedupeMode mode) {
    const auto c = static_cast<int64_t>(runtimes.size());
    ConfigSet out;
    if (mode == DedupeMode::kKeep) {
        out.indices.resize(static_cast<size_t>(c));
        for (int64_t i = 0; i < c; ++i) out.indices[i] = i;
        out.targets.assign(runtimes.begin(), runtimes.end());
        return out;
    }
    // Groups are numbered in order of their first row, which is the representative.
    std::vector<int64_t> slot(static_cast<size_t>(c), -1);
    std::vector<int64_t> count;
    for (int64_t i = 0; i < c; ++i) {
        const int64_t first = group[i];
        if (slot[first] < 0) {
            slot[first] = out.size();
            out.indices.push_back(first);
            out.targets.push_back(runtimes[i]);
            count.push_back(1);
            continue;
        }
        const int64_t g = slot[first];
        if (mode == DedupeMode::kMin) {
            out.targets[g] = std::min(out.targets[g], runtimes[i]);
        } else {
            out.targets[g] += runtimes[i];
            ++count[g];
        }
    }
    if (mode == DedupeMode::kMean)
        for (size_t g = 0; g < out.targets.size(); ++g)
            out.targets[g] /= static_cast<double>(count[g]);
    return out;
}

constexpr EnumName<DedupeMode> kDedupeNames[] = {
    {DedupeMode::kMin, "min"}, {DedupeMode::kMean, "mean"}, {DedupeMode::kKeep, "keep"}};

}  // namespace

std::span<const EnumName<DedupeMode>> enum_names(DedupeMode) { return kDedupeNames; }
DedupeMode parse_dedupe_mode(std::string_view name) {
    return parse_enum<DedupeMode>("dedupe mode", name);
}
std::string_view to_string(DedupeMode mode) { return enum_name(mode); }

std::vector<int64_t> config_groups(std::span<const int8_t> rows, int64_t row_bytes, int64_t c) {
    return group_rows(rows, row_bytes, c);
}

std::vector<int64_t> config_groups(ConstMatrixView rows) {
    const std::vector<int8_t> bytes = canonical_bytes(rows);
    return group_rows(bytes, rows.cols * static_cast<int64_t>(sizeof(float)), rows.rows);
}

ConfigSet dedupe_configs(std::span<const int8_t> rows, int64_t row_bytes,
                         std::span<const double> runtimes, DedupeMode mode) {
    const auto c = static_cast<int64_t>(runtimes.size());
    const std::vector<int64_t> group = group_rows(rows, row_bytes, c);
    return reduce_groups(group, runtimes, mode);
}

ConfigSet dedupe_configs(ConstMatrixView rows, std::span<const double> runtimes, DedupeMode mode) {
    SEGRANK_CHECK(rows.rows == static_cast<int64_t>(runtimes.size()), "dedupe: ", rows.rows,
                  " config rows but ", runtimes.size(), " runtimes");
    return reduce_groups(config_groups(rows), runtimes, mode);
}

ConfigSet dedupe_configs(std::span<const int8_t> rows, int64_t row_bytes,
                         std::span<const int64_t> runtimes_ns, DedupeMode mode) {
    const std::vector<double> t(runtimes_ns.begin(), runtimes_ns.end());
    return dedupe_configs(rows, row_bytes, t, mode);
}

}  // namespace segrank
