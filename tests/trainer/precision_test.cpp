// model.precision (docs/model.md#precision): a short training run with bf16 numerics
// (bf16_emulated, which runs on any CPU) ends close to the fp32 run, and bf16 falls back to fp32
// where the CPU has no native bf16 products.
#include <doctest/doctest.h>

#include <cmath>
#include <filesystem>

#include "tests/support/test_paths.h"
#include "tests/trainer/trainer_data_util.h"
#include "trainer/comm.h"
#include "trainer/trainer.h"

namespace segrank::test {
namespace {
namespace fs = std::filesystem;

struct RunEnd {
    double loss_mean = 0;  // mean loss of the last 5 steps
    double kendall = 0;    // eval.metric = kendall on the held-out configs
};

RunEnd train_with(const fs::path& dir, MatmulPrecision p) {
    RunConfig cfg = tiny_run_config(dir / "data", dir / str("run_", to_string(p)), 30);
    cfg.model.hidden = 64;  // SAGE products of 2 x ~1000 x 64 x 64 FLOPs: above kBf16MinFlops
    cfg.model.precision = p;
    LocalCommunicator comm;
    Trainer t(cfg, comm);
    RunEnd r;
    for (int s = 0; s < 30; ++s) {
        const double loss = t.step();
        if (s >= 25) r.loss_mean += loss / 5;
    }
    r.kendall = t.evaluate().selection;
    set_matmul_precision(MatmulPrecision::kFp32);
    return r;
}

}  // namespace

TEST_CASE(
    "30 training steps with bf16 numerics end within 0.05 of fp32's loss and 0.1 of its Kendall, "
    "and differ from fp32") {
    const fs::path dir = scratch_dir("precision_train");
    write_tiny_layout_collection(dir / "data");
    const RunEnd f = train_with(dir, MatmulPrecision::kFp32);
    const RunEnd b = train_with(dir, MatmulPrecision::kBf16Emulated);
    CAPTURE(f.loss_mean);
    CAPTURE(b.loss_mean);
    CAPTURE(f.kendall);
    CAPTURE(b.kendall);
    CHECK(b.loss_mean != f.loss_mean);  // bf16 rounding was applied
    CHECK(std::abs(b.loss_mean - f.loss_mean) <= 0.05 * std::max(1.0, std::abs(f.loss_mean)));
    CHECK(std::abs(b.kendall - f.kendall) <= 0.1);
    CHECK(f.kendall > 0.2);  // the run learned something to compare
}

TEST_CASE("model.precision = bf16 runs natively where supported and as fp32 elsewhere") {
    RunConfig cfg;
    cfg.model.precision = MatmulPrecision::kBf16;
    const MatmulPrecision used = apply_model_precision(cfg, false);
    CHECK(used == (bf16_supported() ? MatmulPrecision::kBf16 : MatmulPrecision::kFp32));
    CHECK(matmul_precision() == used);
    set_matmul_precision(MatmulPrecision::kFp32);
}

}  // namespace segrank::test
