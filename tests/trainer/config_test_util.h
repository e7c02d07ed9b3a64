// Shared by the config tests: the error message of loading a TOML text.
#pragma once
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "gnn/core/check.h"
#include "trainer/config.h"

namespace segrank::test {

/// The message of the segrank::Error thrown by loading `text` as configs/x.toml with `overrides`
/// (fails the test if none is thrown).
inline std::string load_error(const std::string& text,
                              const std::vector<std::string>& overrides = {}) {
    try {
        load_config_string(text, "configs/x.toml", overrides);
    } catch (const Error& e) {
        return e.what();
    }
    FAIL("expected a segrank::Error for:\n" << text);
    return "";
}

}  // namespace segrank::test
