// Generated protobuf messages (tuning_min.proto) -> HLO module model. Internal to the reader and
// its tests; everything else uses proto_reader.h.
#pragma once
#include "data/hlo/module.h"
#include "tuning_min.pb.h"  // generated into the build dir of data/ (protobuf_generate_cpp)

namespace segrank::hlo {

/// Field-by-field copy of a decoded ModuleTuningData (absent scalars become 0,
/// docs/files.md#messages). Performs no reference checks (see check_module_tuning()).
ModuleTuning from_proto(const pb::ModuleTuningData& msg);
/// Copy of one HloModuleProto.
HloModule from_proto(const pb::HloModuleProto& msg);

}  // namespace segrank::hlo
