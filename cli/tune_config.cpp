// `segrank tune`'s settings and spellings (cli/tune_rounds.h): --refit and --strategy values, the
// compiler's default config of a graph and a config spelled for XLA, a runtime spelled for the
// progress lines.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <numeric>
#include <string>
#include <vector>

#include "api/cost_model_internal.h"
#include "cli/tune_rounds.h"
#include "gnn/core/check.h"

namespace segrank::cli {

RefitMode parse_refit(const std::string& s) {
    if (s == "none") return RefitMode::kNone;
    if (s == "head") return RefitMode::kHead;
    if (s == "full") return RefitMode::kFull;
    SEGRANK_CHECK(false, "--refit: expected none, head or full, got '", s, "'");
    return RefitMode::kNone;
}

Strategy parse_strategy(const std::string& s) {
    if (s == "model") return Strategy::kModel;
    if (s == "anneal") return Strategy::kAnneal;
    if (s == "random") return Strategy::kRandom;
    SEGRANK_CHECK(false, "--strategy: expected model, anneal or random, got '", s, "'");
    return Strategy::kModel;
}

const char* strategy_name(Strategy s) {
    switch (s) {
        case Strategy::kAnneal:
            return "anneal";
        case Strategy::kRandom:
            return "random";
        case Strategy::kModel:
            break;
    }
    return "model";
}

int64_t default_config(const Graph& g, std::string* rule) {
    const Graph::Impl& gi = *g.impl();
    const GraphSource& src = *gi.entry.source;
    const int64_t c = g.num_configs();
    std::lock_guard<std::recursive_mutex> lock(cost_model_mutex());
    if (g.task() == CostTask::kLayout) {
        const int64_t nc = g.num_config_nodes();
        const int64_t per = nc * kLayoutConfigDim;
        // Read in chunks so a graph with many configurable nodes is not loaded whole.
        const int64_t chunk = std::max<int64_t>(1, (int64_t{8} << 20) / std::max<int64_t>(per, 1));
        std::vector<int8_t> buf;
        for (int64_t b = 0; b < c; b += chunk) {
            const int64_t e = std::min(c, b + chunk);
            std::vector<int64_t> rows(static_cast<size_t>(e - b));
            std::iota(rows.begin(), rows.end(), b);
            buf.resize(static_cast<size_t>((e - b) * per));
            src.read_layout_config_rows(gi.entry.index, rows, buf);
            for (int64_t j = 0; j < e - b; ++j) {
                const int8_t* r = buf.data() + j * per;
                if (std::all_of(r, r + per, [](int8_t v) { return v == -1; })) {
                    if (rule) *rule = "every layout slot -1 (the compiler's default layout)";
                    return b + j;
                }
            }
        }
        if (rule) *rule = "no config leaves every layout slot -1: config 0 taken as the reference";
        return 0;
    }
    const ConfigTensors labels = src.load_labels(gi.entry.index);
    for (int64_t j = 0; j < c; ++j)
        if (labels.runtime[static_cast<size_t>(j)] > 0 &&
            static_cast<size_t>(j) < labels.runtime_normalizers.size() &&
            labels.runtime[static_cast<size_t>(j)] ==
                labels.runtime_normalizers[static_cast<size_t>(j)]) {
            if (rule)
                *rule =
                    "the first config whose runtime equals config_runtime_normalizers (the "
                    "is_default run's time)";
            return j;
        }
    if (rule)
        *rule =
            "no config's runtime equals config_runtime_normalizers (no default marker): config 0 "
            "taken as the reference";
    return 0;
}

Json xla_config(const tune::Config& c, std::span<const int64_t> nodes) {
    if (c.task() == Task::kTile) {
        Json out = Json::object();
        const char* names[3] = {"kernel_bounds", "output_bounds", "input_bounds"};
        for (int t = 0; t < 3; ++t) {
            std::vector<int64_t> b;
            for (int d = 0; d < 6; ++d) b.push_back(static_cast<int64_t>(c.tile[t * 8 + d]));
            while (!b.empty() && b.back() == 0) b.pop_back();
            out[names[t]] = b;
        }
        return out;
    }
    Json out = Json::array();
    const char* names[3] = {"output", "input", "kernel"};
    for (size_t k = 0; k < nodes.size(); ++k) {
        Json node = Json::object();
        node["node"] = nodes[k];
        for (int t = 0; t < 3; ++t) {
            std::string s = "{";
            int n = 0;
            for (int d = 0; d < 6; ++d) {
                const int v = c.layout[k * kLayoutConfigDim + static_cast<size_t>(t * 6 + d)];
                if (v < 0) break;
                if (n++) s += ',';
                s += std::to_string(v);
            }
            node[names[t]] = n == 0 ? std::string("default") : s + "}";
        }
        out.push_back(node);
    }
    return out;
}

std::string runtime_text(double ns) {
    char text[64];
    const double a = std::fabs(ns);
    if (a >= 1e18 || (a < 1e6 && ns != std::floor(ns)))
        std::snprintf(text, sizeof text, "%.6g", ns);
    else
        std::snprintf(text, sizeof text, "%.0f", ns);
    return text;
}

}  // namespace segrank::cli
