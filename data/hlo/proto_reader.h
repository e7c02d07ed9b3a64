// Reads tpu_graphs tuning protobufs (TuningData or a single ModuleTuningData,
// docs/files.md#messages) into the in-memory HLO module model plus measured runs. The only includer
// of the generated tuning_min.pb.h besides its tests.
#pragma once
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "data/hlo/module.h"

namespace segrank::hlo {

/// Which top-level message a tuning file holds.
enum class TuningFileKind {
    kTuningData,        ///< tpu_graphs.TuningData: many modules (tile kernels, op_config runs)
    kModuleTuningData,  ///< one tpu_graphs.ModuleTuningData (layout module, module_config runs)
};

/// "TuningData" / "ModuleTuningData".
const char* to_string(TuningFileKind kind);

/// The decoded content of one tuning file.
struct TuningFile {
    TuningFileKind kind = TuningFileKind::kTuningData;
    std::vector<ModuleTuning> modules;  ///< one entry for a ModuleTuningData file
};

/// Reads and decodes `path`, detecting whether it is a TuningData or a ModuleTuningData (top-level
/// field numbers 2-4 only occur in ModuleTuningData; otherwise TuningData is tried first and
/// ModuleTuningData second). Every module is checked with check_module_tuning().
/// Throws segrank::Error naming the file and the problem when the file cannot be read, is
/// truncated, has a field with the wrong wire type, uses groups, or fails check_module_tuning().
TuningFile read_tuning_file(const std::filesystem::path& path);

/// Same as read_tuning_file() on in-memory serialized bytes; `where` names the source in messages.
TuningFile parse_tuning_bytes(std::string_view bytes, const std::string& where);

/// Decodes one serialized ModuleTuningData (no detection). Throws segrank::Error like above.
ModuleTuning parse_module_tuning_bytes(std::string_view bytes, const std::string& where);

/// Checks the references inside one module so that featurizing cannot fail later:
/// instruction ids unique in the module; every operand id and root id names an instruction of the
/// module (root ids: of that computation); every called computation id names a computation;
/// config_index_to_node values < number of nodes; every module_config run has exactly one
/// NodeLayoutConfig per configurable node and at most 3 tensors per node.
/// Throws segrank::Error starting with `where` (plus the module name) on the first violation.
void check_module_tuning(const ModuleTuning& mt, const std::string& where);

}  // namespace segrank::hlo
