// naming_graph_on_oom (data/graph_memory.h): a failed allocation in one graph's work becomes an
// error naming the graph, its file and size, and the caller's settings; other exceptions and
// results pass unchanged.
#include "data/graph_memory.h"

#include <doctest/doctest.h>

#include <stdexcept>
#include <string>

namespace {
segrank::GraphInfo resnet_info() {
    segrank::GraphInfo g;
    g.name = "resnet";
    g.source = "data/npz/layout/xla/random/train/resnet.npz";
    g.num_nodes = 1200;
    g.num_edges = 1900;
    g.num_configs = 40;
    return g;
}
}  // namespace

TEST_CASE("naming_graph_on_oom turns bad_alloc into an error naming graph, file, size, settings") {
    std::string message;
    try {
        segrank::naming_graph_on_oom(resnet_info(), "training on", "lower model.hidden",
                                     []() -> int { throw std::bad_alloc(); });
    } catch (const segrank::Error& e) {
        message = e.what();
    }
    CHECK(message ==
          "out of memory while training on graph 'resnet' "
          "(data/npz/layout/xla/random/train/resnet.npz, 1200 nodes, 1900 edges, 40 configs): an "
          "allocation failed; lower model.hidden");
}

TEST_CASE("naming_graph_on_oom returns the work's result and passes other exceptions unchanged") {
    CHECK(segrank::naming_graph_on_oom(resnet_info(), "scoring", "", [] { return 7; }) == 7);
    CHECK_THROWS_WITH_AS(
        segrank::naming_graph_on_oom(resnet_info(), "scoring", "",
                                     []() -> int { throw std::runtime_error("disk"); }),
        "disk", std::runtime_error);
}
