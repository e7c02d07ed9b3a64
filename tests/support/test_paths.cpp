// Test path helpers; directories are baked in by tests/CMakeLists.txt.
#include "tests/support/test_paths.h"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string_view>
#include <thread>

namespace segrank::test {

std::filesystem::path shared_dir_location() {
    if (const char* env = std::getenv("SEGRANK_SHARED_DIR")) return env;
    return SEGRANK_SHARED_DIR;
}

std::optional<std::filesystem::path> shared_dir() {
    const std::filesystem::path p = shared_dir_location();
    if (std::filesystem::is_directory(p)) return std::filesystem::canonical(p);
    return std::nullopt;
}

bool shared_data_expected() {
    const char* env = std::getenv("SEGRANK_EXPECT_SHARED_DATA");
    return env && *env && std::string_view(env) != "0";
}

std::optional<std::filesystem::path> shared_data_dir() {
    auto s = shared_dir();
    if (!s || !std::filesystem::is_directory(*s / "data")) return std::nullopt;
    return *s / "data";
}

std::filesystem::path source_dir() { return SEGRANK_SOURCE_DIR; }

std::filesystem::path segrank_binary() {
    return std::filesystem::path(SEGRANK_BINARY_DIR) / "cli" / "segrank";
}

std::filesystem::path scratch_dir(const std::string& name) {
    static std::atomic<int> counter{0};
    std::filesystem::path p =
        std::filesystem::path(SEGRANK_BINARY_DIR) / "test_scratch" /
        (name + "_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(p);
    std::filesystem::create_directories(p);
    return p;
}

CommandResult run_command(const std::string& command) {
    CommandResult r;
    std::string cmd = command + " 2>&1";
    FILE* pipe = ::popen(cmd.c_str(), "r");
    if (!pipe) {
        r.exit_code = -1;
        return r;
    }
    std::array<char, 4096> buf{};
    size_t n;
    while ((n = std::fread(buf.data(), 1, buf.size(), pipe)) > 0) r.output.append(buf.data(), n);
    int status = ::pclose(pipe);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return r;
}

CommandResult run_bash_script(const std::filesystem::path& dir, const std::string& script) {
    write_file_text(dir / "signals.sh", script + "\n");
    return run_command("{ bash " + sq((dir / "signals.sh").string()) + " 2> " +
                       sq((dir / "jobs.txt").string()) + "; }");
}

CommandResult run_segrank_in_source(const std::string& args, int threads,
                                    const std::string& prefix) {
    return run_command("cd " + sq(source_dir().string()) +
                       " && OMP_NUM_THREADS=" + std::to_string(threads) + " " + prefix +
                       sq(segrank_binary().string()) + " " + args);
}

CommandResult run_segrank_in(const std::filesystem::path& dir, const std::string& args) {
    return run_command("(cd " + sq(dir.string()) + " && env OMP_NUM_THREADS=1 " +
                       sq(segrank_binary().string()) + " " + args + " 2>&1)");
}

int spawn_shell_with_default_sigint(const std::string& command, const std::filesystem::path& log) {
    const pid_t pid = ::fork();
    if (pid == 0) {
        std::signal(SIGINT, SIG_DFL);
        const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
        ::dup2(fd, 1);
        ::dup2(fd, 2);
        ::execl("/bin/sh", "sh", "-c", command.c_str(), static_cast<char*>(nullptr));
        ::_exit(127);
    }
    return pid;
}

bool child_exited_before_file(int pid, const std::filesystem::path& path, int& status) {
    for (int i = 0; i < 1200 && !std::filesystem::exists(path); ++i) {
        if (::waitpid(pid, &status, WNOHANG) == pid) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    return false;
}

InterruptedRun sigint_once_file_exists(const std::string& command,
                                       const std::filesystem::path& file,
                                       const std::filesystem::path& log) {
    InterruptedRun r;
    const int pid = spawn_shell_with_default_sigint(command, log);
    if (pid < 0) return r;
    if (child_exited_before_file(pid, file, r.status) || !std::filesystem::exists(file)) {
        ::kill(pid, SIGKILL);
        ::waitpid(pid, &r.status, 0);
        r.output = read_file_text(log);
        return r;
    }
    r.started = ::kill(pid, SIGINT) == 0 && ::waitpid(pid, &r.status, 0) == pid;
    r.output = read_file_text(log);
    return r;
}

std::string read_file_text(const std::filesystem::path& p) {
    std::ifstream in(p, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

void write_file_text(const std::filesystem::path& p, const std::string& text) {
    std::ofstream f(p, std::ios::binary | std::ios::trunc);
    f << text;
}

std::string replaced_first(std::string s, const std::string& from, const std::string& to) {
    const size_t at = s.find(from);
    return at == std::string::npos ? "(no " + from + ")" : s.replace(at, from.size(), to);
}

bool have_python3() { return run_command("command -v python3 >/dev/null 2>&1").exit_code == 0; }

}  // namespace segrank::test
