// Running the PyTorch peer of `segrank bench` as a child process and reading its JSON result.
#include "cli/bench_peer.h"

#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>
#include <vector>

#include "gnn/core/check.h"
#include "util/json.h"

namespace segrank::cli {

// Whether `python` names an executable file: a path (with '/') directly, else looked up in PATH.
bool executable_found(const std::string& python) {
    namespace fs = std::filesystem;
    auto ok = [](const fs::path& p) {
        std::error_code ec;
        return fs::is_regular_file(p, ec) && ::access(p.c_str(), X_OK) == 0;
    };
    if (python.find('/') != std::string::npos) return ok(python);
    const char* path = std::getenv("PATH");
    std::stringstream dirs(path ? path : "");
    for (std::string d; std::getline(dirs, d, ':');)
        if (!d.empty() && ok(fs::path(d) / python)) return true;
    return false;
}

// Runs the peer with the benchmark's model and step settings and returns the numeric members of
// its JSON line. Throws segrank::Error naming the command, its exit status and the end of its
// stderr when it fails or prints no result.
std::map<std::string, double> run_peer(const std::string& python, const std::string& script,
                                       const std::string& args) {
    namespace fs = std::filesystem;
    const fs::path err_path = fs::temp_directory_path() /
                              ("segrank_bench_peer_" + std::to_string(::getpid()) + ".stderr");
    std::ostringstream cmd;
    cmd << python << " " << script << " " << args;
    std::cerr << "  peer: " << cmd.str() << "\n";
    const std::string full = cmd.str() + " 2>'" + err_path.string() + "'";
    std::string text;
    int rc = -1;
    if (FILE* p = popen(full.c_str(), "r")) {
        char buf[4096];
        while (fgets(buf, sizeof buf, p)) text += buf;
        rc = pclose(p);
    }
    std::string err_tail;
    {
        std::ifstream f(err_path);
        std::vector<std::string> lines;
        for (std::string line; std::getline(f, line);) lines.push_back(line);
        const size_t from = lines.size() > 12 ? lines.size() - 12 : 0;
        for (size_t i = from; i < lines.size(); ++i) err_tail += "\n    " + lines[i];
    }
    std::error_code ec;
    fs::remove(err_path, ec);
    if (rc != 0) {
        std::string status = "could not be started";
        if (rc != -1 && WIFEXITED(rc))
            status = "exited with code " + std::to_string(WEXITSTATUS(rc));
        else if (rc != -1 && WIFSIGNALED(rc))
            status = "was killed by signal " + std::to_string(WTERMSIG(rc));
        throw Error(str("the PyTorch peer ", status, ": ", cmd.str(),
                        err_tail.empty() ? std::string() : "\n  its stderr ends:" + err_tail,
                        "\n  (--no-peer skips the peer; --python and --peer-script choose it)"));
    }
    // The peer prints one JSON object with a "peer" member as its last such line.
    std::istringstream lines(text);
    Json result;
    for (std::string line; std::getline(lines, line);) {
        if (line.empty() || line.front() != '{') continue;
        try {
            Json j = read_json(line, "peer output");
            if (j.is_object() && j.contains("peer")) result = std::move(j);
        } catch (const Error&) {
            // a line of other output that happens to start with '{'
        }
    }
    SEGRANK_CHECK(result.is_object(),
                  "the PyTorch peer printed no JSON line with a \"peer\" member: ", cmd.str());
    std::map<std::string, double> out;
    for (const auto& [key, value] : result.items())
        if (value.is_number()) out[key] = value.get<double>();
    SEGRANK_CHECK(out.count("median_step_s") && out.at("median_step_s") > 0,
                  "the PyTorch peer's result has no positive median_step_s: ", cmd.str());
    return out;
}

}  // namespace segrank::cli
