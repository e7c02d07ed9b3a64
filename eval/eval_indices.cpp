// eval.indices JSON (docs/metrics.md#which-configs-are-scored): exactly {"graph name": [int, ...],
// ...}, read with the project's one JSON parser (util/json_value.h) and then checked for that
// shape. Every error names the file, line and column.
#include <cmath>
#include <cstdint>
#include <fstream>
#include <sstream>

#include "eval/metrics.h"
#include "gnn/core/check.h"
#include "util/json_value.h"
#include "util/user_input.h"

namespace segrank {
namespace {

constexpr const char* kShape = " (expected {\"graph name\": [config indices], ...})";

const char* kind_name(const JsonValue& v) {
    switch (v.kind()) {
        case JsonValue::Kind::kNull:
            return "null";
        case JsonValue::Kind::kBool:
            return "a boolean";
        case JsonValue::Kind::kNumber:
            return "a number";
        case JsonValue::Kind::kString:
            return "a string";
        case JsonValue::Kind::kArray:
            return "an array";
        case JsonValue::Kind::kObject:
            return "an object";
    }
    return "a value";
}

[[noreturn]] void fail(const JsonValue& at, const std::string& where, const std::string& what) {
    throw Error(str(at.location(where), ": eval.indices: ", what, kShape));
}

int64_t config_index(const JsonValue& v, const std::string& key, const std::string& where) {
    if (!v.is_number())
        fail(v, where,
             str("expected a non-negative integer in the list of \"", key, "\", found ",
                 kind_name(v)));
    const std::optional<int64_t> i = v.as_integer();
    if (!i) {
        // Integer-valued but out of int64 range, or written with a fraction / exponent.
        if (std::abs(v.as_number()) >= 9.2e18 && std::floor(v.as_number()) == v.as_number())
            fail(v, where, str("config index too large in the list of \"", key, "\""));
        fail(v, where, str("config indices must be integers (list of \"", key, "\")"));
    }
    if (*i < 0) fail(v, where, str("negative config index ", *i, " in the list of \"", key, "\""));
    return *i;
}

}  // namespace

EvalIndices parse_eval_indices(std::string_view text, const std::string& where) {
    JsonValue doc;
    try {
        doc = parse_json(text, where);
    } catch (const Error& e) {
        throw Error(str(e.what(), " in eval.indices", kShape));
    }
    if (!doc.is_object())
        fail(doc, where, str("expected '{' opening the object, found ", kind_name(doc)));
    EvalIndices out;
    for (const auto& [key, list] : doc.members()) {
        if (!list.is_array())
            fail(list, where,
                 str("expected '[' starting the index list of \"", key, "\", found ",
                     kind_name(list)));
        std::vector<int64_t> indices;
        indices.reserve(list.items().size());
        // Repeats are kept, as the TpuGraphs paper's own files have them (xla_random.json lists
        // 481 distinct configs of unet_3d.4x4.bf16 in 1000 entries) and its baseline scores the
        // list as given: the two copies of a repeated config have one runtime, a tie Kendall tau-b
        // leaves out (docs/metrics.md#which-configs-are-scored).
        for (const JsonValue& item : list.items())
            indices.push_back(config_index(item, key, where));
        out.emplace(key, std::move(indices));
    }
    return out;
}

EvalIndices load_eval_indices(const std::filesystem::path& path) {
    return parse_eval_indices(read_input_file(path, "an eval.indices JSON file", kMaxJsonFileBytes),
                              path.string());
}

GraphMetrics evaluate_graph(const std::string& name, std::span<const float> scores,
                            std::span<const double> targets, const EvalIndices& indices) {
    const auto it = indices.find(name);
    SEGRANK_CHECK(it != indices.end(), "eval.indices has no entry for graph \"", name, "\"");
    SEGRANK_CHECK(!it->second.empty(), "eval.indices lists no configs for graph \"", name, "\"");
    SEGRANK_CHECK(scores.size() == targets.size(), name, ": ", scores.size(), " scores but ",
                  targets.size(), " targets");
    const std::string where = str("eval.indices[\"", name, "\"]");
    const std::vector<double> s(scores.begin(), scores.end());
    const std::vector<double> sel_s = select_indices(s, it->second, where);
    const std::vector<float> sel_f(sel_s.begin(), sel_s.end());
    const std::vector<double> sel_t = select_indices(targets, it->second, where);
    return evaluate_graph(name, sel_f, sel_t);
}

}  // namespace segrank
