// dump_config and config_keys: RunConfig -> commented TOML text (every key, one-line docs),
// the format of configs/default.toml and of the effective config in a run directory; save_config
// and load_config, the config files.
#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

#include "gnn/core/check.h"
#include "trainer/config_schema.h"
#include "util/atomic_file.h"
#include "util/user_input.h"

namespace segrank {
namespace {

using cfg::detail::format_double;
using cfg::detail::quote_toml;

template <typename T>
std::string toml_value(const T& v) {
    if constexpr (std::is_same_v<T, bool>) {
        return v ? "true" : "false";
    } else if constexpr (std::is_enum_v<T>) {
        return quote_toml(to_string(v));
    } else if constexpr (std::is_integral_v<T>) {
        return std::to_string(v);
    } else if constexpr (std::is_floating_point_v<T>) {
        return format_double(v);
    } else if constexpr (std::is_same_v<T, std::string>) {
        return quote_toml(v);
    } else if constexpr (std::is_same_v<T, std::vector<std::string>>) {
        std::string out = "[";
        for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + quote_toml(v[i]);
        return out + "]";
    } else {
        static_assert(std::is_same_v<T, std::vector<LossTerm>>);
        std::string out = "[";
        for (size_t i = 0; i < v.size(); ++i)
            out += str(i ? ", " : "", "{ name = ", quote_toml(to_string(v[i].kind)),
                       ", weight = ", format_double(v[i].weight), " }");
        return out + "]";
    }
}

/// Writes `key = value  # doc` lines, comments aligned at a fixed column.
class Dumper {
public:
    void section(std::string_view name, std::string_view doc) {
        os_ << "\n[" << name << "]  # " << doc << "\n";
    }
    template <typename T>
    void field(std::string_view key, const T& value, std::string_view doc,
               cfg::detail::Check = {}) {
        std::string line = str(key, " = ", toml_value(value));
        constexpr size_t kCommentColumn = 36;
        line +=
            line.size() < kCommentColumn ? std::string(kCommentColumn - line.size(), ' ') : "  ";
        os_ << line << "# " << doc << "\n";
    }
    std::string text() const { return os_.str(); }

private:
    std::ostringstream os_;
};

class KeyLister {
public:
    explicit KeyLister(std::vector<ConfigKeyInfo>* out) : out_(out) {}
    void section(std::string_view name, std::string_view) { section_ = name; }
    template <typename T>
    void field(std::string_view key, const T& value, std::string_view doc,
               cfg::detail::Check = {}) {
        out_->push_back({str(section_, ".", key), std::string(doc), toml_value(value)});
    }

private:
    std::vector<ConfigKeyInfo>* out_;
    std::string section_;
};

}  // namespace

std::string dump_config(const RunConfig& cfg) {
    Dumper d;
    cfg::detail::visit_schema(d, cfg);
    return "# segrank run configuration (docs/config.md): every key with its value and meaning.\n"
           "# Override any key with `--set section.key=value`; unknown keys are errors.\n" +
           d.text();
}

void save_config(const RunConfig& cfg, const std::filesystem::path& file) {
    std::error_code ec;
    if (file.has_parent_path()) std::filesystem::create_directories(file.parent_path(), ec);
    SEGRANK_CHECK(!ec, "cannot create directory '", file.parent_path().string(),
                  "': ", ec.message());
    write_file_atomically(file, dump_config(cfg));
}

std::vector<ConfigKeyInfo> config_keys() {
    std::vector<ConfigKeyInfo> out;
    KeyLister k(&out);
    const RunConfig defaults{};
    cfg::detail::visit_schema(k, defaults);
    return out;
}

RunConfig load_config(const std::string& path, const std::vector<std::string>& overrides) {
    // An ifstream opens a directory on Linux and reads nothing: that would be an empty (default)
    // config.
    std::error_code ec;
    const auto st = std::filesystem::status(path, ec);
    SEGRANK_CHECK(st.type() != std::filesystem::file_type::not_found, path,
                  ": no such file (expected a TOML config file)");
    SEGRANK_CHECK(st.type() != std::filesystem::file_type::directory, path,
                  ": is a directory, expected a TOML file");
    return load_config_string(read_input_file(path, "a TOML config file", kMaxConfigFileBytes),
                              path, overrides);
}

}  // namespace segrank
