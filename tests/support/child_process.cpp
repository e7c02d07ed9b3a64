// fork + wait4: the child's exit, exception text and peak RSS.
#include "tests/support/child_process.h"

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <exception>

namespace segrank::test {

ChildResult run_in_child(const std::function<void()>& fn) {
    ChildResult r;
    int fds[2];
    if (::pipe(fds) != 0) {
        r.exit_code = -1;
        r.error = "pipe() failed";
        return r;
    }
    const pid_t pid = ::fork();
    if (pid < 0) {
        r.exit_code = -1;
        r.error = "fork() failed";
        return r;
    }
    if (pid == 0) {
        ::close(fds[0]);
        int code = 0;
        std::string msg;
        try {
            fn();
        } catch (const std::exception& e) {
            code = 1;
            msg = e.what();
        }
        for (size_t off = 0; off < msg.size();) {
            const ssize_t w = ::write(fds[1], msg.data() + off, msg.size() - off);
            if (w <= 0) break;
            off += static_cast<size_t>(w);
        }
        ::_exit(code);  // no atexit handlers or static destructors of the parent's state
    }
    ::close(fds[1]);
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        r.error.append(buf, static_cast<size_t>(n));
    ::close(fds[0]);
    int status = 0;
    struct rusage ru {};
    ::wait4(pid, &status, 0, &ru);
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    r.peak_rss_kb = ru.ru_maxrss;
    return r;
}

}  // namespace segrank::test
