// Retired keys and "did you mean" suggestions for the config loader's messages.
#include "trainer/config_keys.h"

#include <algorithm>
#include <limits>

#include "gnn/core/check.h"
#include "trainer/config.h"

namespace segrank::cfg::detail {

namespace {

/// Why the model options below were removed (docs/model.md says what each was).
constexpr std::string_view kRemovedOption =
    "it tied or lost on the transfer benchmark, docs/benchmarks.md#ablation-summary";
constexpr RetiredKey kRetiredKeys[] = {
    {"hwmodel.noise_sigma", "the label noise of synthetic data is `segrank synth --noise`"},
    {"model.layout_mismatch", kRemovedOption, "false"},
    {"model.layout_embedding", kRemovedOption, "0"},
    {"model.norm", kRemovedOption, "\"layer\"", /*off_loads=*/true},
};

}  // namespace

const RetiredKey* find_retired(std::string_view dotted) {
    for (const auto& r : kRetiredKeys)
        if (r.key == dotted) return &r;
    return nullptr;
}

std::optional<std::string> retired_key_message(const RetiredKey& r, const std::string& dotted,
                                               const std::string& literal, bool stored) {
    if (!stored && r.off_loads) {
        if (literal != r.off)
            return str(literal, " was removed (", r.replacement, "); ", r.off,
                       " is the only value left: delete the key");
    } else if (!stored) {
        return str("removed key (", r.replacement, "); delete it");
    } else if (!r.off.empty() && literal != r.off) {
        return str("this checkpoint was trained with ", dotted, " = ", literal,
                   ", an option that was removed (", r.replacement,
                   "); this version cannot use its parameters (retrain without it)");
    }
    return std::nullopt;
}

std::string key_suggestion(const std::string& given, bool top_level,
                           const std::vector<std::string>& sections,
                           const std::vector<std::string>& keys) {
    const std::string bare = top_level ? given : given.substr(given.find('.') + 1);
    for (const auto& k : keys)  // the same key in another section
        if (k.substr(k.find('.') + 1) == bare) return str(" (did you mean '", k, "'?)");
    std::string best;
    int best_d = std::numeric_limits<int>::max();
    auto consider = [&](const std::string& cand, std::string_view a, std::string_view b) {
        const int d = edit_distance(a, b);
        if (d < best_d) best_d = d, best = cand;
    };
    if (top_level)
        for (const auto& s : sections) consider(s, given, s);
    else
        for (const auto& k : keys) consider(k, given, k);
    const int limit = std::max<int>(2, static_cast<int>(bare.size()) / 3);
    if (best.empty() || best_d > limit) return "";
    return str(" (did you mean '", best, "'?)");
}

}  // namespace segrank::cfg::detail
