// What a user gives: input paths that must be regular files (a FIFO would block a reader, a device
// such as /dev/zero would feed it without end), and values echoed back in messages kept short.
#pragma once
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace segrank {

/// Why stat() of `path` failed with errno `err` when a symbolic link is the cause, for a message
/// after "<path>: ": "is a symbolic link loop (ELOOP: ...)" for ELOOP, "is a broken symbolic link
/// (to '<target>', which does not exist)" for ENOENT on a dangling link; nullopt otherwise.
std::optional<std::string> describe_link_problem(const std::filesystem::path& path, int err);

/// True when `path` itself is a symbolic link (lstat) that stat() cannot follow because links
/// point at each other (ELOOP), e.g. loop1 -> loop2 -> loop1: such a link is not dangling (its
/// target exists, as a link), and messages say "is a symbolic link loop" (describe_link_problem).
/// False for a path that is not a link, a dangling link, or a loop only above `path`.
bool is_link_loop(const std::filesystem::path& path);

/// Throws segrank::Error naming `path` unless it is a regular file (symbolic links followed):
/// "no such file", "is a directory", "is a symbolic link loop", "is a broken symbolic link", or
/// "is a FIFO / character device / block device / socket", each followed by the expectation, e.g.
/// what = "an npz file". Only stat()s the path: a FIFO is never opened.
void require_regular_input(const std::filesystem::path& path, std::string_view what);

/// require_regular_input, then throws segrank::Error unless this process may open `path` for
/// reading: "<path>: cannot open for reading (expected <what>): <the system's reason>", e.g.
/// "Permission denied". Opens the file and closes it again.
void require_readable_input(const std::filesystem::path& path, std::string_view what);

/// What `path` is, for a message: "a directory", "a regular file", "a FIFO (named pipe)", "a
/// character device", "a block device", "a socket" (symbolic links followed), or nullptr when it
/// does not exist or cannot be stat()ed.
const char* file_kind(const std::filesystem::path& path);

/// Throws segrank::Error unless `path` is a directory: "<path>: no such directory (expected
/// <what>)", "<path>: is a symbolic link loop (ELOOP: ...), expected <what>" (or a broken link), or
/// "<path>: is a character device, expected <what>" (any kind of file, named).
void require_input_folder(const std::filesystem::path& path, std::string_view what);

/// Size bounds (bytes) of the user files segrank reads whole into memory, checked with stat before
/// reading (require_input_size), so a huge or sparse file is refused naming it instead of failing
/// an allocation.
/// A TOML config (run configs are a few KB; `config.toml` of a run, `--config`).
inline constexpr uint64_t kMaxConfigFileBytes = uint64_t{16} << 20;
/// One JSON document: `eval.indices`, `report.json`, a tuning run's `tune.json` / `best.json`, a
/// `--leaderboard` / `--eval` JSON. An eval.indices entry costs at least 3 bytes per config index
/// ("7, "); 64 MiB holds over 20 million indices, 1000 times the TpuGraphs paper's 1000 indices per
/// evaluation graph over every layout evaluation graph (about 41 KB per collection).
inline constexpr uint64_t kMaxJsonFileBytes = uint64_t{64} << 20;
/// A line-per-record log or table: `metrics.jsonl`, `measurements.jsonl`, submission and scores
/// CSVs (a scores CSV of every config of the full TpuGraphs test set is well under 1 GiB).
inline constexpr uint64_t kMaxLinesFileBytes = uint64_t{1} << 30;
/// A tuning protobuf (`ingest`, `data.ingest`): protobuf messages are limited to 2 GiB.
inline constexpr uint64_t kMaxProtobufFileBytes = uint64_t{2} << 30;

/// require_regular_input, then throws segrank::Error unless `path` holds at most `max_bytes`:
/// "<path>: N bytes (X MiB), more than the M bytes (Y MiB) allowed for <what>". Only stat()s.
void require_input_size(const std::filesystem::path& path, std::string_view what,
                        uint64_t max_bytes);

/// The bytes of the regular file `path` after require_input_size; a file that grows past
/// `max_bytes` while being read gets the same error. Throws segrank::Error naming the path when it
/// cannot be opened or read.
std::string read_input_file(const std::filesystem::path& path, std::string_view what,
                            uint64_t max_bytes);

/// Why the system would refuse `path` as a file name before looking at the disk, for a message
/// after "<key>: ": "the path component '<first 80 bytes>... (N more bytes)' is N bytes long, more
/// than the 255 bytes a file name may have (File name too long)" (NAME_MAX), or "the path is N
/// bytes long, more than the 4096 bytes (PATH_MAX) a path may have (File name too long)";
/// nullopt for an ordinary path. The path itself is never echoed whole.
std::optional<std::string> path_length_problem(std::string_view path);

/// Longest value (bytes) echo_value shows whole.
inline constexpr size_t kEchoMaxBytes = 80;

/// The one helper for text from outside (file names, CSV fields, IDs, a harness's replies and
/// error texts, option values) echoed on the terminal or in a message: `value` whole when at most
/// `max` bytes, else its first `max` bytes (backed off to a UTF-8 character boundary) then
/// "... (N more bytes)", so a 10 MB ID does not become a 10 MB message. Control characters are
/// shown escaped so one message stays one line and cannot drive the terminal: \n, \r, \t, and
/// \xHH for the other C0 bytes (NUL, ESC ...), DEL and bytes that are not UTF-8; the C1 controls
/// U+0080..U+009F as \u0080..\u009f. Valid UTF-8 text (an accented file name) stays as it is.
/// `max` = std::string_view::npos escapes without cutting (a table cell).
std::string echo_value(std::string_view value, size_t max = kEchoMaxBytes);

/// echo_value of each line of `text`, not cut, the line breaks ('\n') kept: for a message that is
/// several lines on purpose (every error message of the CLI goes through it, util/exit_status.h),
/// whose other control characters (an ESC, a DEL) are escaped.
std::string echo_lines(std::string_view text);

}  // namespace segrank
