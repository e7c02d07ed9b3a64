// Out of memory while working on one graph (training, evaluating, scoring) turned into an error
// naming the graph, its size and the settings its memory grows with (docs/config.md#out-of-memory).
#pragma once
#include <new>
#include <string>
#include <string_view>

#include "data/graph_source.h"
#include "gnn/core/check.h"

namespace segrank {

/// "out of memory while <doing> graph '<name>' (<source>, N nodes, E edges, C configs): an
/// allocation failed; <settings>". `doing` says what the process was doing ("training on",
/// "evaluating", "scoring"); `settings` names what to lower, e.g. "its memory grows with
/// model.hidden = 128 ...; lower them or give the process more memory".
std::string graph_oom_message(const GraphInfo& graph, std::string_view doing,
                              std::string_view settings);

/// Runs `work` (the `doing` of `graph`) and returns its result; a std::bad_alloc it throws becomes
/// segrank::Error(graph_oom_message(graph, doing, settings)), so a user learns which graph did not
/// fit and what to change (not a bare "out of memory"). Other exceptions pass unchanged.
template <typename F>
auto naming_graph_on_oom(const GraphInfo& graph, std::string_view doing, std::string_view settings,
                         F&& work) -> decltype(work()) {
    try {
        return work();
    } catch (const std::bad_alloc&) {
        throw Error(graph_oom_message(graph, doing, settings));
    }
}

}  // namespace segrank
