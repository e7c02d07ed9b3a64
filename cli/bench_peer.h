// The PyTorch peer of `segrank bench` (../shared/peers/torch_reference.py): finding its interpreter
// and running it on the benchmark's graph and settings.
#pragma once
#include <cstdint>
#include <map>
#include <string>

namespace segrank::cli {

/// Whether `python` names an executable file: a path (with '/') directly, else looked up in PATH.
bool executable_found(const std::string& python);

/// Runs `python script args` (the peer with the benchmark's model and step settings) and returns
/// the numeric members of the last JSON line it prints that has a "peer" member (e.g.
/// median_step_s in seconds, peak_rss_mb). The peer runs in its own process group; after
/// `timeout_s` seconds (`bench --peer-timeout`) the group is killed. Throws segrank::Error naming
/// the command, its exit status and the end of its stderr when it fails, prints no such line,
/// reports no positive median_step_s, or is killed at the timeout (naming the script and
/// --peer-timeout).
std::map<std::string, double> run_peer(const std::string& python, const std::string& script,
                                       const std::string& args, int64_t timeout_s);

}  // namespace segrank::cli
