// score_configs CHECKPOINT... GRAPH: loads one or more segrank checkpoints (run directories or
// .ckpt.h5 files; several = an ensemble), scores every configuration of GRAPH (a TpuGraphs .npz,
// STORE.h5:NAME or a tuning .pb) and prints the predicted best five, fastest first.
#include <segrank/cost_model.h>

#include <cstdio>
#include <exception>
#include <string>
#include <vector>

int main(int argc, char** argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s CHECKPOINT... GRAPH\n", argv[0]);
        return 2;
    }
    try {
        const std::vector<std::string> checkpoints(argv + 1, argv + argc - 1);
        const segrank::CostModel model(checkpoints);
        const segrank::Graph graph = segrank::Graph::open(argv[argc - 1]);
        const std::vector<double> scores = model.score(graph);  // lower = predicted faster
        const std::vector<int64_t> order = segrank::CostModel::ranking(scores);
        std::printf("%s: %s graph, %lld configs\n", graph.name().c_str(),
                    segrank::cost_task_name(graph.task()),
                    static_cast<long long>(graph.num_configs()));
        for (size_t i = 0; i < order.size() && i < 5; ++i)
            std::printf("best %zu: config %lld score %.6g\n", i + 1,
                        static_cast<long long>(order[i]), scores[static_cast<size_t>(order[i])]);
        return 0;
    } catch (const std::exception& e) {
        std::fprintf(stderr, "score_configs: %s\n", e.what());
        return 1;
    }
}
