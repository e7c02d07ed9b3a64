// npz / npy reader: the npy header parser on the raw bytes, then the bytes as an npz archive
// through NpzReader (every entry's header, then the entry read as float32 and as int64) and the
// tile and layout loaders with all their checks.
#include <cstddef>
#include <cstdint>
#include <vector>

#include "data/graph.h"
#include "data/npz.h"
#include "fuzz/fuzz_util.h"
#include "gnn/core/check.h"

using namespace segrank;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    try {
        const NpyHeader h = parse_npy_header({data, size}, "input");
        (void)h.payload_bytes();
    } catch (const Error&) {
    }
    const auto path = fuzz::write_temp("npz", data, size);
    try {
        const NpzReader z(path);
        for (const auto& key : z.keys()) {
            try {
                (void)z.header(key);
            } catch (const Error&) {
            }
            std::vector<int64_t> shape;
            try {
                (void)z.read_f32(key, &shape);
            } catch (const Error&) {
            }
            try {
                (void)z.read_i64(key, &shape);
            } catch (const Error&) {
            }
        }
    } catch (const Error&) {
    }
    for (const LabelPolicy labels : {LabelPolicy::kAllowTestZeros, LabelPolicy::kRequirePositive}) {
        try {
            (void)load_tile_npz(path, labels);
        } catch (const Error&) {
        }
        try {
            (void)load_layout_npz(path, labels);
        } catch (const Error&) {
        }
    }
    return 0;
}
