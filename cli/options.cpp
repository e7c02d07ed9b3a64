// parse_or_help (see options.h).
#include "cli/options.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "data/collection.h"
#include "gnn/core/check.h"
#include "gnn/core/parallel.h"
#include "gst/inference_budget.h"
#include "util/user_input.h"

namespace segrank::cli {
namespace {

// The options argv gives `value` to, in argv order: "--chunk" for `--chunk abc` or `--chunk=abc`,
// "-n" for `-n abc` (an empty value too: `--threads ''`, `--threads=`).
// Each with whether the value was attached (--chunk=abc).
std::vector<std::pair<std::string, bool>> options_given(int argc, char** argv,
                                                        const std::string& value) {
    std::vector<std::pair<std::string, bool>> out;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const size_t eq = a.find('=');
        if (a.rfind("--", 0) == 0 && eq != std::string::npos && a.substr(eq + 1) == value)
            out.emplace_back(a.substr(0, eq), true);
        else if (a == value && i > 1 && argv[i - 1][0] == '-' && argv[i - 1][1] != '\0' &&
                 std::string_view(argv[i - 1]).find('=') == std::string_view::npos)
            out.emplace_back(argv[i - 1], false);
    }
    return out;
}

// The value inside cxxopts' "Argument 'abc' failed to parse" (ASCII or typographic quotes; empty
// for `''`), or nullopt when the message quotes nothing.
std::optional<std::string> quoted_value(const std::string& message) {
    for (const auto& [l, r] :
         {std::pair<std::string, std::string>{"\u2018", "\u2019"}, {"'", "'"}}) {
        const size_t b = message.find(l);
        if (b == std::string::npos) continue;
        const size_t e = message.rfind(r);
        if (e != std::string::npos && e >= b + l.size())
            return message.substr(b + l.size(), e - b - l.size());
    }
    return std::nullopt;
}

// Whether cxxopts parses `value` for `option` ("--budget" or "-n") as `options` declares it: the
// probe that tells an integer option from a floating-point one, signed from unsigned, and the
// integer's width, without a table of option types beside the declarations.
bool parses(cxxopts::Options& options, const std::string& option, const std::string& value) {
    const bool long_form = option.rfind("--", 0) == 0;
    std::vector<std::string> words = {options.program()};
    if (long_form) {
        words.push_back(option + "=" + value);
    } else {
        words.push_back(option);
        words.push_back(value);
    }
    std::vector<const char*> argv;
    for (const std::string& w : words) argv.push_back(w.c_str());
    try {
        (void)options.parse(static_cast<int>(argv.size()), argv.data());
        return true;
    } catch (const cxxopts::exceptions::exception&) {
        return false;
    }
}

// Whether `option` is a flag (true or false), from its help entry.
bool is_flag(const cxxopts::Options& options, const std::string& option) {
    const std::string name = option.substr(option.find_first_not_of('-'));
    for (const std::string& g : options.groups())
        for (const cxxopts::HelpOptionDetails& d : options.group_help(g).options)
            if (d.s == name || std::find(d.l.begin(), d.l.end(), name) != d.l.end())
                return d.is_boolean;
    return false;
}

// "--budget: expected an integer, got ''": what `option` takes (probed: true or false, a number,
// an integer, a non-negative integer) and, for a value that is a number outside the type's range,
// "(out of range of a 64-bit integer)" / "(out of range of a double)".
std::string mistyped_value_message(cxxopts::Options& options, const std::string& option,
                                   const std::string& value) {
    const std::string shown = echo_value(value);
    if (is_flag(options, option)) return str(option, ": expected true or false, got '", shown, "'");
    if (parses(options, option, "1.5")) {
        // strtod takes what istream >> double refuses as out of range ("1e999").
        errno = 0;
        char* end = nullptr;
        (void)std::strtod(value.c_str(), &end);
        const bool range = !value.empty() && end == value.c_str() + value.size() && errno == ERANGE;
        return str(option, ": expected a number, got '", shown, "'",
                   range ? " (out of range of a double)" : "");
    }
    const bool is_signed = parses(options, option, "-1");
    int bits = 0;  // the widest integer the option parses
    const char* const kMax[2][4] = {{"255", "65535", "4294967295", "18446744073709551615"},
                                    {"127", "32767", "2147483647", "9223372036854775807"}};
    for (int k = 0; k < 4; ++k)
        if (parses(options, option, kMax[is_signed ? 1 : 0][k])) bits = 8 << k;
    const std::string digits = value.substr(!value.empty() && value[0] == '-' ? 1 : 0);
    const bool integer =
        !digits.empty() && digits.find_first_not_of("0123456789") == std::string::npos;
    const bool negative = integer && value[0] == '-';
    std::string note;
    if (integer && !(negative && !is_signed) && bits > 0)
        note = str(" (out of range of a ", bits, "-bit", is_signed ? "" : " unsigned", " integer)");
    return str(option, ": expected ", is_signed ? "an integer" : "a non-negative integer",
               ", got '", shown, "'", note);
}

// The message for cxxopts' "Argument 'X' failed to parse": the option it was given to (the first
// in argv whose value X fails to parse, as cxxopts goes in order) and what it takes; cxxopts'
// own text when no option of argv took X.
std::string incorrect_argument_message(cxxopts::Options& options, int argc, char** argv,
                                       const std::string& what) {
    const std::optional<std::string> value = quoted_value(what);
    if (!value) return what;
    for (const auto& [option, attached] : options_given(argc, argv, *value)) {
        // A flag takes a value only as --flag=VALUE; the word after it is an argument.
        if (!attached && is_flag(options, option)) continue;
        if (!parses(options, option, *value))
            return mistyped_value_message(options, option, *value);
    }
    return what;
}

// Throws when an option that takes one value is given more than once: cxxopts keeps the last one
// silently, so `--out a --out b` would write b alone. A flag may repeat (it means the same). An
// option that takes a list (--checkpoint, --truth, --compare ...) may repeat, but not with the same
// path twice (an ensemble of one model twice); --set may repeat freely (the last value wins, as
// documented).
void refuse_repeated_options(const cxxopts::Options& options, const cxxopts::ParseResult& args,
                             const std::string& see) {
    struct Kind {
        bool list = false, flag = false;
    };
    std::map<std::string, Kind> kinds;  // long name -> what it takes
    for (const std::string& g : options.groups())
        for (const cxxopts::HelpOptionDetails& d : options.group_help(g).options)
            for (const std::string& l : d.l) kinds[l] = {d.is_container, d.is_boolean};
    std::map<std::string, std::vector<std::string>> given;
    for (const cxxopts::KeyValue& kv : args.arguments()) given[kv.key()].push_back(kv.value());
    for (const auto& [key, values] : given) {
        const auto it = kinds.find(key);
        if (values.size() < 2 || (it != kinds.end() && it->second.flag)) continue;
        if (it != kinds.end() && it->second.list) {
            // --set: the last value of a key wins; leaderboard's positional submissions are
            // checked there (same file under two spellings too).
            if (key == "set" || key == "submissions") continue;
            std::vector<std::string> sorted = values;
            std::sort(sorted.begin(), sorted.end());
            const auto dup = std::adjacent_find(sorted.begin(), sorted.end());
            SEGRANK_CHECK(dup == sorted.end(), "--", key, " lists '", echo_value(*dup),
                          "' twice; give each once", see);
            continue;
        }
        std::string shown;
        for (const std::string& v : values) shown += (shown.empty() ? "" : ", ") + echo_value(v);
        throw Error(str("--", key, " given ", values.size(), " times (", shown,
                        "): it takes one value; give it once", see));
    }
}

// cxxopts reads "0x10" as 16 for a numeric option; segrank's own number parsers (synth's
// --nodes, the config's TOML integers) are decimal only, so every numeric option is too: throws
// mistyped_value_message's "--steps: expected an integer, got '0x10'" for a hexadecimal value.
void refuse_hex_numbers(cxxopts::Options& options, const cxxopts::ParseResult& args,
                        const std::string& see) {
    for (const cxxopts::KeyValue& kv : args.arguments()) {
        const std::string& v = kv.value();
        const size_t at = !v.empty() && (v[0] == '-' || v[0] == '+') ? 1 : 0;
        if (v.size() < at + 2 || v[at] != '0' || (v[at + 1] != 'x' && v[at + 1] != 'X')) continue;
        const std::string option = "--" + kv.key();
        if (is_flag(options, option) || parses(options, option, "abc")) continue;  // not a number
        throw Error(mistyped_value_message(options, option, v) + see);
    }
}

}  // namespace

std::optional<cxxopts::ParseResult> parse_or_help(cxxopts::Options& options, int argc,
                                                  char** argv) {
    const std::string see = str(" (see ", options.program(), " --help)");
    std::optional<cxxopts::ParseResult> args;
    try {
        args = options.parse(argc, argv);
    } catch (const cxxopts::exceptions::incorrect_argument_type& e) {
        // cxxopts names only the value; name the option it was given to and what it takes.
        throw Error(incorrect_argument_message(options, argc, argv, e.what()) + see);
    } catch (const cxxopts::exceptions::exception& e) {
        // Unknown options, missing or mistyped values: the user's mistake, not an internal error.
        throw Error(e.what() + see);
    }
    if (args->count("help")) {
        std::printf("%s\n", options.help().c_str());
        return std::nullopt;
    }
    SEGRANK_CHECK(args->unmatched().empty(), "unexpected argument '", args->unmatched().front(),
                  "'", see);
    refuse_repeated_options(options, *args, see);
    refuse_hex_numbers(options, *args, see);
    return args;
}

int thread_option(const cxxopts::ParseResult& args, const std::string& name, bool zero_is_all) {
    const int n = args[name].as<int>();
    const int lo = zero_is_all ? 0 : 1;
    SEGRANK_CHECK(n >= lo && n <= kMaxThreads, "--", name, ": expected ",
                  zero_is_all ? "0 (all cores) to " : "1 to ", kMaxThreads, ", got ", n);
    if (n > 0) return n;
    return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace segrank::cli

namespace segrank::cli {

OutputTarget check_output_option(std::string_view option, const std::string& path) {
    SEGRANK_CHECK(!path.empty(), option, ": the path is empty (give a file path)");
    // Outputs are written atomically (a temporary file renamed into place), which a pipe cannot
    // be; `-` would otherwise become a file named "-" in the current directory.
    SEGRANK_CHECK(path != "-", option,
                  " -: '-' is not standard output here: give a file path, or /dev/stdout to "
                  "write to standard output");
    try {
        return resolve_output(path);
    } catch (const Error& e) {
        throw Error(str(option, " ", e.what()));
    }
}

void refuse_same_output(std::string_view option_a, const std::string& path_a,
                        std::string_view option_b, const std::string& path_b) {
    const OutputTarget b = check_output_option(option_b, path_b);
    if (b.write_through || !same_file(path_a, path_b)) return;
    throw Error(str(option_a, " ", path_a, " and ", option_b, " ", path_b, " name the same file (",
                    resolve_links(path_b).string(), "): give two different paths"));
}

namespace {

// The first 512 bytes of `file` ("" when unreadable).
std::string file_head(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    std::string head(512, '\0');
    in.read(head.data(), static_cast<std::streamsize>(head.size()));
    head.resize(static_cast<size_t>(std::max<std::streamsize>(in.gcount(), 0)));
    return head;
}

// `head` without leading white space, lower-cased, at most n characters.
std::string lower_start(std::string_view head, size_t n) {
    const size_t b = head.find_first_not_of(" \t\r\n");
    std::string s = b == std::string_view::npos ? std::string() : std::string(head.substr(b, n));
    for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return s;
}

}  // namespace

void refuse_long_path(std::string_view option, std::string_view path, std::string_view written) {
    if (const auto why = path_length_problem(path))
        throw Error(str(option, " ", echo_value(path), ": ", *why, ": give a shorter ", option));
    // The path fits, but the files the command writes under it (or beside it) would not: the same
    // rule as train's run directory (trainer/run_dir_check.cpp).
    if (path.size() + written.size() >= PATH_MAX) {
        const bool child = written.starts_with('/');
        const std::string name =
            child ? std::string(written.substr(1))
                  : std::filesystem::path(path).filename().string() + std::string(written);
        throw Error(str(option, " ", echo_value(path), ": the path is ", path.size(),
                        " bytes long; with the names written ", child ? "in" : "beside", " it (",
                        echo_value(name, 320), ") it exceeds PATH_MAX (", PATH_MAX,
                        " bytes): give a shorter ", option));
    }
}

void refuse_dangling_link(std::string_view option, const std::filesystem::path& path) {
    namespace fs = std::filesystem;
    std::error_code ec;
    for (fs::path at = path; !at.empty(); at = at.has_relative_path() ? at.parent_path() : "") {
        if (fs::exists(fs::status(at, ec))) break;
        if (is_link_loop(at))  // its target exists (a link): not dangling
            throw Error(str(option, " ", path.string(), ": ",
                            at == path ? std::string() : str("'", at.string(), "' "),
                            *describe_link_problem(at, ELOOP),
                            ": remove one of the links or give another ", option));
        if (!fs::is_symlink(fs::symlink_status(at, ec))) continue;
        throw Error(str(option, " ", path.string(), ": ",
                        at == path ? std::string() : str("'", at.string(), "' "),
                        "is a dangling symbolic link to '", fs::read_symlink(at, ec).string(),
                        "' (which does not exist): remove the link, create that folder or give "
                        "another ",
                        option));
    }
}

std::string describe_file_kind(const std::filesystem::path& file) {
    namespace fs = std::filesystem;
    std::error_code ec, link_ec;
    const fs::file_status st = fs::status(file, ec);
    if (fs::is_symlink(fs::symlink_status(file, link_ec)) && ec) {
        const std::string target = fs::read_symlink(file, link_ec).string();
        if (ec == std::errc::no_such_file_or_directory)
            return str("a dangling symbolic link to ", target);
        return str("a symbolic link to ", target, " that cannot be followed (", ec.message(), ")");
    }
    if (ec) return str("a file whose kind cannot be read (", ec.message(), ")");
    if (fs::is_directory(st)) return "a directory";
    if (fs::is_fifo(st)) return "a named pipe (FIFO)";
    if (fs::is_socket(st)) return "a socket";
    if (fs::is_block_file(st) || fs::is_character_file(st)) return "a device";
    if (std::FILE* f = std::fopen(file.c_str(), "rb"))
        std::fclose(f);
    else
        return str("a file that cannot be read (", std::strerror(errno), ")");
    const std::string head = file_head(file);
    if (head.empty()) return "an empty file";
    if (head.rfind("\x89HDF\r\n\x1a\n", 0) == 0)
        return "an HDF5 file (a checkpoint or graph store)";
    if (head.rfind("PK\x03\x04", 0) == 0) return "a zip archive (an npz file)";
    if (head.rfind("\x93NUMPY", 0) == 0) return "an npy array";
    const std::string start = lower_start(head, 15);
    if (start.starts_with("<!doctype html") || start.starts_with("<html")) return "an HTML page";
    if (start.starts_with("{") || start.starts_with("[{")) return "a JSON or JSON-lines file";
    if (head.rfind("ID,TopConfigs", 0) == 0) return "a submission CSV (ID,TopConfigs)";
    if (head.rfind("ID,config,score", 0) == 0) return "a scores CSV (ID,config,score)";
    const std::string ext = file.extension().string();
    if (ext == ".toml" || start.starts_with("[")) return "a TOML file";
    if (ext == ".csv") return "a CSV file";
    return "a file of another kind";
}

void refuse_replacing_other_file(std::string_view option, const std::string& path,
                                 bool (*is_kind)(std::string_view head), std::string_view kind,
                                 std::string_view command) {
    const OutputTarget target = check_output_option(option, path);
    std::error_code ec;
    if (target.write_through) return;
    // A missing folder fails the write at the end: refuse it before the work (the folder as
    // written, "a/b/.." being "a").
    const std::filesystem::path parent = target.path.lexically_normal().parent_path();
    SEGRANK_CHECK(parent.empty() || std::filesystem::is_directory(parent, ec), option, " ", path,
                  ": cannot write: folder '", parent.string(), "' does not exist");
    if (!std::filesystem::is_regular_file(target.path, ec)) return;
    const std::string head = file_head(target.path);
    if (head.empty() || is_kind(head)) return;
    throw Error(str(option, " ", path, ": is ", describe_file_kind(target.path), ", not ", kind,
                    ": ", command,
                    " replaces only an earlier one; give another path or remove the file"));
}

std::string split_option(const cxxopts::ParseResult& args, const std::string& name) {
    const std::string value = args[name].as<std::string>();
    for (Split s : {Split::kTrain, Split::kValid, Split::kTest, Split::kUnknown})
        if (value == to_string(s)) return value;
    throw Error(str("--", name, ": expected train, valid, test or unknown, got '", value, "'"));
}

uint64_t seed_option(const cxxopts::ParseResult& args, const std::string& name) {
    const int64_t seed = args[name].as<int64_t>();
    SEGRANK_CHECK(seed >= 0, "--", name, ": expected a seed >= 0, got ", seed);
    return static_cast<uint64_t>(seed);
}

int64_t memory_mb_option(const cxxopts::ParseResult& args, const std::string& name) {
    if (!args.count(name)) return 0;
    const int64_t mb = args[name].as<int64_t>();
    SEGRANK_CHECK(mb >= kMinInferenceMemoryMb && mb <= kMaxInferenceMemoryMb, "--", name,
                  ": expected ", kMinInferenceMemoryMb, " to ", kMaxInferenceMemoryMb, ", got ",
                  mb);
    return mb;
}

}  // namespace segrank::cli
