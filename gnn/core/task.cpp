// Name table of Task.
#include "gnn/core/task.h"

namespace segrank {
namespace {
constexpr EnumName<Task> kTaskNames[] = {{Task::kTile, "tile"}, {Task::kLayout, "layout"}};
}  // namespace

std::span<const EnumName<Task>> enum_names(Task) { return kTaskNames; }
Task parse_task(std::string_view s) { return parse_enum<Task>("task", s); }
std::string_view to_string(Task t) { return enum_name(t); }

}  // namespace segrank
