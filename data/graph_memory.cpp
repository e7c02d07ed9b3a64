// The out-of-memory message of one graph's work (data/graph_memory.h).
#include "data/graph_memory.h"

namespace segrank {

std::string graph_oom_message(const GraphInfo& graph, std::string_view doing,
                              std::string_view settings) {
    std::string where = graph.source.empty() ? std::string() : graph.source.string() + ", ";
    return str("out of memory while ", doing, " graph '", graph.name, "' (", where, graph.num_nodes,
               " nodes, ", graph.num_edges, " edges, ", graph.num_configs,
               " configs): an allocation failed; ", settings);
}

}  // namespace segrank
