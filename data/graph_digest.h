// Content digests of one graph of a GraphSource: XXH3-64 (gnn/core/hash.h) over everything a run
// reads of it, so that ranks of a job (trainer/rank_agreement.h) and a resumed run
// (trainer/run_dir.h, data manifest) can check that they read the same data.
#pragma once
#include <cstdint>

#include "data/graph_source.h"

namespace segrank {

/// Two XXH3-64 digests of graph i of a source, each over arrays in a fixed order with their
/// lengths, the same for an npz file and the HDF5 store packed from it.
struct GraphDigest {
    /// node_feat [n, 140] f32, node_opcode [n] i32, edge_index [m, 2] i64 and, for layout,
    /// node_config_ids [nc] i64 and node_splits [k] i64.
    uint64_t structure = 0;
    /// The config rows in stored order with their runtimes: tile config_feat [c, 24] f32,
    /// config_runtime [c] and config_runtime_normalizers [c] i64; layout node_config_feat
    /// [c, nc, 18] i8 and config_runtime [c] i64. Reordered rows change it.
    uint64_t configs = 0;
};

/// Reads graph i of `src` once (npz: the whole graph; a store with partial reads: node features
/// and config rows in chunks of at most `chunk_bytes`, so memory stays bounded) and digests it.
/// Throws what the source's loads throw (segrank::Error naming the file for invalid data).
GraphDigest graph_digest(const GraphSource& src, int64_t i, int64_t chunk_bytes = 16 << 20);

}  // namespace segrank
