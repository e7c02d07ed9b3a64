// `segrank hwmodel explain` and `segrank hwmodel validate` (used by cli/hwmodel.cpp).
#pragma once

namespace segrank::cli {

/// `explain <file.pb|file.npz> [--config i] [--module NAME] [--top N] [--hardware NAME]`: prints
/// the cost breakdown (docs/hwmodel.md#breakdown) of one configuration. argv[0] = "explain".
int run_hwmodel_explain(int argc, char** argv);

/// `validate [--data DIR] [--hardware NAME]`: the fixture validation table
/// (docs/hwmodel.md#validation) from DIR/xla_tuning/{op_tuning_data,module_tuning_data_layout}.pb.
/// argv[0] = "validate".
int run_hwmodel_validate(int argc, char** argv);

}  // namespace segrank::cli
