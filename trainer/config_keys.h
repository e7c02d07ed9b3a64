// The key vocabulary of a config for the loader's messages (trainer/config.cpp,
// docs/config.md#errors): the schema's sections and dotted keys, the retired keys of earlier
// versions with what replaced them, and "did you mean" suggestions. No toml++ here: plain text.
#pragma once
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "trainer/config_schema.h"

namespace segrank::cfg::detail {

/// Collects the dotted keys and section names of the schema (a visit_schema visitor).
struct KeyCollector {
    std::vector<std::string> sections;
    std::vector<std::string> keys;  ///< dotted ("optim.lr")
    void section(std::string_view name, std::string_view) { sections.emplace_back(name); }
    template <typename T>
    void field(std::string_view key, const T&, std::string_view, Check = {}) {
        keys.push_back(sections.back() + "." + std::string(key));
    }
};

/// Keys that earlier versions of segrank wrote into run configs and checkpoints and that no longer
/// exist, with what replaced them (or why they went). A config file or override naming one is an
/// error that says so (unless `off_loads` and it says `off`). A stored config (checkpoint) drops
/// them, except a removed model option (`off` set) whose stored value is not `off`: that
/// checkpoint's parameters need the option, so it is refused, naming the file and the key.
struct RetiredKey {
    std::string_view key, replacement;
    /// The value (as TOML writes it: false, 0, "layer") that means what the code now always does;
    /// empty = any stored value is dropped.
    std::string_view off = {};
    /// A config file or override may still say `key = off` (it has no effect): for a key whose
    /// removed values leave one, so configs that spelled out the default keep loading.
    bool off_loads = false;
};

/// The retired key `dotted` ("model.norm"), or nullptr.
const RetiredKey* find_retired(std::string_view dotted);

/// The message for retired key `r` (named `dotted`) set to `literal` (its value as TOML writes it)
/// in a config file or override (`stored` false) or in a checkpoint's stored config (`stored`
/// true); nullopt when the key is accepted (and ignored).
std::optional<std::string> retired_key_message(const RetiredKey& r, const std::string& dotted,
                                               const std::string& literal, bool stored);

/// " (did you mean 'optim.lr'?)" for an unknown section (`top_level`) or dotted key `given`, or ""
/// when nothing in `sections` / `keys` is close: the same key in another section, else the
/// nearest name within an edit distance of max(2, length / 3).
std::string key_suggestion(const std::string& given, bool top_level,
                           const std::vector<std::string>& sections,
                           const std::vector<std::string>& keys);

}  // namespace segrank::cfg::detail
