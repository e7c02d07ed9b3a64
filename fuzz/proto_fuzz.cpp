// Protobuf ingest: TuningData / ModuleTuningData detection and decoding with every reference check,
// then the featurizer (tile or layout, as `segrank ingest` picks) on each decoded module.
#include <cstddef>
#include <cstdint>

#include "data/hlo/featurizer.h"
#include "data/hlo/proto_reader.h"
#include "fuzz/fuzz_util.h"
#include "gnn/core/check.h"

using namespace segrank;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    hlo::TuningFile file;
    try {
        file = hlo::parse_tuning_bytes(fuzz::as_text(data, size), "input.pb");
    } catch (const Error&) {
        return 0;
    }
    for (const auto& mt : file.modules) {
        try {
            const auto task = hlo::detect_task(mt);
            if (!task) continue;
            if (*task == Task::kTile) {
                const auto f = hlo::featurize_tile(mt, "input.pb");
                if (f.graph) validate(*f.graph, LabelPolicy::kAllowTestZeros, "featurized");
            } else {
                const auto f = hlo::featurize_layout(mt, "input.pb");
                if (f.graph) validate(*f.graph, LabelPolicy::kAllowTestZeros, "featurized");
            }
        } catch (const Error&) {
        }
    }
    return 0;
}
