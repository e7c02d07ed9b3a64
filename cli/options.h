// The option parsing every subcommand shares: cxxopts parse, `-h/--help`, and cxxopts errors turned
// into segrank::Error naming the option and pointing to --help.
#pragma once
#include <cstdint>
#include <cxxopts.hpp>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

#include "util/atomic_file.h"

namespace segrank::cli {

/// Parses argv with `options` (program name e.g. "segrank stats"). With -h/--help prints the
/// help text to stdout and returns nullopt (the command then exits 0). Throws segrank::Error
/// "<cxxopts' message> (see <program> --help)" for an unknown option or a missing value,
/// "--chunk: expected an integer, got 'abc' (see <program> --help)" for a mistyped value of any
/// option ("an integer", "a non-negative integer", "a number" or "true or false", probed from the
/// option's declared type; an empty value included: "--threads: expected an integer, got ''"), with
/// " (out of range of a 64-bit integer)" for a number the type cannot hold, the same "expected an
/// integer, got '0x10'" for a hexadecimal value of a numeric option (numbers are decimal only),
/// and "unexpected argument 'X' (see <program> --help)" for a positional argument no option takes.
std::optional<cxxopts::ParseResult> parse_or_help(cxxopts::Options& options, int argc, char** argv);

/// The integer option `--<name>` as an OpenMP thread count. With zero_is_all, 0 means every core
/// (std::thread::hardware_concurrency(), at least 1) and the allowed range is 0..kMaxThreads
/// (gnn/core/parallel.h), else 1..kMaxThreads. Throws segrank::Error "--threads: expected 0 (all
/// cores) to 1024, got -3" outside the range.
int thread_option(const cxxopts::ParseResult& args, const std::string& name = "threads",
                  bool zero_is_all = true);

/// The split option `--<name>` ("--split"): one of the split folders of the collection layout
/// (data/collection.h parse_split). Throws segrank::Error "--split: expected train, valid, test or
/// unknown, got 'bogus'". Precondition: the option is present (args.count(name)).
std::string split_option(const cxxopts::ParseResult& args, const std::string& name = "split");

/// The integer option `--<name>` as a random seed, 0..INT64_MAX (as --seed of synth and tune).
/// Throws segrank::Error "--random: expected a seed >= 0, got -1". Precondition: present.
uint64_t seed_option(const cxxopts::ParseResult& args, const std::string& name);

/// The integer option `--<name>` ("--memory-mb" of predict and tune) as ScoreOptions::memory_mb:
/// MiB scoring may hold per graph, kMinInferenceMemoryMb..kMaxInferenceMemoryMb
/// (gst/inference_budget.h, as eval.memory_mb), or 0 when the option is absent (the checkpoint's
/// eval.memory_mb). Throws segrank::Error "--memory-mb: expected 16 to 1048576, got 8".
int64_t memory_mb_option(const cxxopts::ParseResult& args, const std::string& name = "memory-mb");

/// resolve_output(path) (util/atomic_file.h) for the output option `option` ("--out"), called
/// before any work: a directory, FIFO, socket, block device or unreadable path throws
/// segrank::Error "--out PATH: is a FIFO (named pipe), ..." naming the option and the path; an
/// empty path throws "--out: the path is empty ..." and "-" throws "--out -: '-' is not standard
/// output here: give a file path, or /dev/stdout ..." (outputs are written atomically).
OutputTarget check_output_option(std::string_view option, const std::string& path);

/// Refuses, before any work, two output options naming one file: `path_a` and `path_b` compared by
/// same_file (util/atomic_file.h: symbolic links followed, dangling ones to their target, "..",
/// hard links), unless `path_b` is written through (/dev/null, /dev/stdout). Throws
/// segrank::Error "--out A and --scores B name the same file (RESOLVED): give two different
/// paths" naming both options, both paths as given and the file they lead to; errors of
/// check_output_option(option_b, path_b) first.
void refuse_same_output(std::string_view option_a, const std::string& path_a,
                        std::string_view option_b, const std::string& path_b);

/// Before any work: throws segrank::Error "OPTION PATH: the path component 'ddd... (220 more
/// bytes)' is 300 bytes long, more than the 255 bytes a file name may have (File name too long):
/// give a shorter OPTION" (or the whole path longer than PATH_MAX) when the system would refuse
/// `path` (given as `option`, e.g. "--out") by its length alone (util/user_input.h
/// path_length_problem); PATH is echoed cut to 80 bytes. `written` is the longest name the command
/// writes from `path`: a file in it ("/npz/.../x.npz.tmp-4294967295", starting with '/') or a
/// temporary beside it (".tmp-4294967295", appended to the name); when `path` fits but `path` +
/// `written` does not (PATH_MAX, counting the terminating NUL), throws "OPTION PATH: the path is
/// 4082 bytes long; with the names written in it (npz/...) it exceeds PATH_MAX (4096 bytes): give
/// a shorter OPTION" (as train says for its run directory), before anything is created.
void refuse_long_path(std::string_view option, std::string_view path,
                      std::string_view written = "");

/// Before any work: throws segrank::Error "OPTION PATH: is a dangling symbolic link to 'T' (which
/// does not exist): remove the link, create that folder or give another OPTION" when `path` (given
/// as `option`, e.g. "--out") or a folder above it ("OPTION PATH: 'AT' is a dangling ...") is a
/// symbolic link whose target does not exist: creating it would fail with "File exists", and
/// removing it would delete the user's link. The link is left as it is. Links that point at each
/// other (loop1 -> loop2 -> loop1) are not dangling: "OPTION PATH: is a symbolic link loop (ELOOP
/// ...): remove one of the links or give another OPTION".
void refuse_dangling_link(std::string_view option, const std::filesystem::path& path);

/// What an existing file is, from its first bytes (and name), for messages: "an HDF5 file (a
/// checkpoint or graph store)", "a zip archive (an npz file)", "a JSON or JSON-lines file",
/// "an HTML page", "a submission CSV (ID,TopConfigs)", "a scores CSV (ID,config,score)", "a CSV
/// file", "a TOML file", "an empty file", or "a file of another kind"; from its kind first: "a
/// directory", "a dangling symbolic link to T", "a named pipe (FIFO)", "a socket", "a device", "a
/// file that cannot be read (Permission denied)". Never blocks (a FIFO is not opened).
std::string describe_file_kind(const std::filesystem::path& file);

/// The output option `option` may replace an existing regular file only when it is of the kind the
/// command writes (`is_kind` of the file's first 512 bytes: an earlier output) or empty: a
/// mistyped path naming a checkpoint, metrics.jsonl, a config or a data file is refused before any
/// work, so that the command never destroys its inputs. Missing paths in an existing folder and
/// write-through targets (/dev/null, /dev/stdout) pass; a path in a missing folder throws
/// "--out PATH: cannot write: folder 'DIR' does not exist", also before the work. Throws
/// segrank::Error "--out PATH: is an HDF5 file (a checkpoint or graph store), not a submission CSV
/// (ID,TopConfigs): segrank predict replaces only an earlier one; give another path or remove the
/// file".
void refuse_replacing_other_file(std::string_view option, const std::string& path,
                                 bool (*is_kind)(std::string_view head), std::string_view kind,
                                 std::string_view command);

}  // namespace segrank::cli
