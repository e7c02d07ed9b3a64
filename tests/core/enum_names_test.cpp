// Enum name tables: lookup, the listed names, and the one error message of every enum parser.
#include "gnn/core/enum_names.h"

#include <doctest/doctest.h>

#include "gnn/core/task.h"

using namespace segrank;

TEST_CASE("an enum name table maps names to values and back") {
    CHECK(find_enum<Task>("layout") == Task::kLayout);
    CHECK_FALSE(find_enum<Task>("Layout").has_value());
    CHECK(enum_name(Task::kTile) == "tile");
    CHECK(to_string(Task::kLayout) == "layout");
    CHECK(parse_task("tile") == Task::kTile);
    for (const auto& e : enum_names(Task{})) CHECK(parse_task(to_string(e.value)) == e.value);
}

TEST_CASE("a bad name is refused with the table's names quoted in order") {
    CHECK(enum_name_list<Task>() == "\"tile\", \"layout\"");
    CHECK_THROWS_WITH_AS(parse_task("graph"),
                         "unknown task \"graph\" (valid: \"tile\", \"layout\")", Error);
    CHECK_THROWS_WITH_AS(parse_enum<Task>("model task", ""),
                         "unknown model task \"\" (valid: \"tile\", \"layout\")", Error);
}
