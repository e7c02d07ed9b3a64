// eval.indices JSON (eval/eval_indices.cpp): the strict parser, then evaluate_graph on every listed
// graph with fixed 8-config scores and targets (indices out of range or repeated are errors).
#include <cstddef>
#include <cstdint>
#include <vector>

#include "eval/metrics.h"
#include "fuzz/fuzz_util.h"
#include "gnn/core/check.h"

using namespace segrank;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    EvalIndices idx;
    try {
        idx = parse_eval_indices(fuzz::as_text(data, size), "fuzz.json");
    } catch (const Error&) {
        return 0;
    }
    const std::vector<float> scores = {0.5f, 0.1f, 0.9f, 0.3f, 0.3f, 0.7f, 0.2f, 0.8f};
    const std::vector<double> targets = {5, 1, 9, 3, 4, 7, 2, 8};
    for (const auto& [name, list] : idx) {
        try {
            (void)evaluate_graph(name, scores, targets, idx);
        } catch (const Error&) {
        }
    }
    return 0;
}
