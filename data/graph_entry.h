// GraphEntry: one graph of a run as the layers above data/ see it (its source, index, collection,
// sizes and the configs a role may use). Built by trainer/dataset.h; read by gst/ and eval/.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "data/collection.h"
#include "data/graph_source.h"

namespace segrank {

/// One graph of the run. `id` is its position in the run's sorted list of training graphs (train
/// role) or evaluation graphs (eval role); ids decide ownership (docs/sampling.md#ownership) and
/// RNG streams.
struct GraphEntry {
    int64_t id = 0;
    const GraphSource* source = nullptr;  ///< owned by the Dataset
    int64_t index = 0;                    ///< graph index within `source`
    CollectionId collection;
    std::string name;  ///< file stem
    GraphInfo info;
    /// Config indices usable by this role (holdout = configs); empty = every config of the graph.
    std::vector<int64_t> configs;
};

}  // namespace segrank
