// What a user gives: input paths that must be regular files (a FIFO would block a reader, a device
// such as /dev/zero would feed it without end), and values echoed back in messages kept short.
#pragma once
#include <cstddef>
#include <filesystem>
#include <string>
#include <string_view>

namespace segrank {

/// Throws segrank::Error naming `path` unless it is a regular file (symbolic links followed):
/// "no such file", "is a directory", or "is a FIFO / character device / block device / socket",
/// each followed by "(expected <what>)", e.g. what = "an npz file". Only stat()s the path: a FIFO
/// is never opened.
void require_regular_input(const std::filesystem::path& path, std::string_view what);

/// What `path` is, for a message: "a directory", "a regular file", "a FIFO (named pipe)", "a
/// character device", "a block device", "a socket" (symbolic links followed), or nullptr when it
/// does not exist or cannot be stat()ed.
const char* file_kind(const std::filesystem::path& path);

/// Throws segrank::Error unless `path` is a directory: "<path>: no such directory (expected
/// <what>)" or "<path>: is a character device, expected <what>" (any kind of file, named).
void require_input_folder(const std::filesystem::path& path, std::string_view what);

/// Longest value (bytes) echo_value shows whole.
inline constexpr size_t kEchoMaxBytes = 80;

/// `value` for an error message: whole when at most `max` bytes, else its first `max` bytes then
/// "... (N bytes)", so a 10 MB ID does not become a 10 MB message. Control characters (a newline in
/// a file name) are shown as \n, \r, \t or \xHH so one message stays one line.
std::string echo_value(std::string_view value, size_t max = kEchoMaxBytes);

}  // namespace segrank
