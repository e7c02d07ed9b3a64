// ParamStore layout/initialization, AdamW against a hand-computed step, clipping, LR schedules.
#include "gnn/optim.h"

#include <doctest/doctest.h>

#include <cmath>

#include "gnn/param_store.h"

using namespace segrank;

TEST_CASE(
    "param store packs named parameters into 64-byte aligned arenas and initializes by seed") {
    ParamStore ps;
    const ParamId w = ps.add("lin.weight", 3, 5, true, ParamInit::kUniformFanIn, 5);
    const ParamId b = ps.add("lin.bias", 1, 3, false, ParamInit::kUniformFanIn, 5);
    const ParamId g = ps.add("ln.gamma", 1, 3, false, ParamInit::kOnes);
    const ParamId e = ps.add("emb.weight", 4, 2, false, ParamInit::kNormal);
    CHECK_THROWS_WITH_AS(ps.add("lin.bias", 1, 1, false, ParamInit::kZeros),
                         doctest::Contains("duplicate"), Error);
    ps.initialize(42);
    CHECK(ps.ref(b).offset % 16 == 0);
    CHECK(ps.num_parameters() == 15 + 3 + 3 + 8);
    for (int64_t i = 0; i < 15; ++i) CHECK(std::abs(ps.value(w).data[i]) <= 1.0 / std::sqrt(5.0));
    CHECK(ps.value(g).data[2] == 1.0f);
    CHECK(ps.find("emb.weight").value() == e);
    CHECK_FALSE(ps.find("nope"));
    ParamStore ps2;
    ps2.add("lin.weight", 3, 5, true, ParamInit::kUniformFanIn, 5);
    ps2.add("lin.bias", 1, 3, false, ParamInit::kUniformFanIn, 5);
    ps2.add("ln.gamma", 1, 3, false, ParamInit::kOnes);
    ps2.add("emb.weight", 4, 2, false, ParamInit::kNormal);
    ps2.initialize(42);
    for (int64_t i = 0; i < ps.total_size(); ++i) CHECK(ps.values()[i] == ps2.values()[i]);
    CHECK_THROWS_AS(ps.add("late", 1, 1, false, ParamInit::kZeros), Error);
}

TEST_CASE("adamw step matches the torch formula and decays only weight matrices") {
    ParamStore ps;
    const ParamId w = ps.add("w", 1, 2, true, ParamInit::kZeros);
    const ParamId b = ps.add("b", 1, 1, false, ParamInit::kZeros);
    ps.finalize();
    ps.value(w).data[0] = 1.0f;
    ps.value(w).data[1] = -2.0f;
    ps.value(b).data[0] = 3.0f;
    ps.grad(w).data[0] = 0.5f;
    ps.grad(w).data[1] = 0.0f;
    ps.grad(b).data[0] = -1.0f;
    AdamW opt(ps, AdamWConfig{});
    const float lr = 0.1f;
    opt.step(ps, lr);
    // Step 1: m_hat = g, v_hat = g^2 -> update = lr * g / (|g| + eps) = lr * sign(g).
    CHECK(ps.value(w).data[0] == doctest::Approx(1.0 * (1 - 0.1 * 0.01) - 0.1).epsilon(1e-6));
    CHECK(ps.value(w).data[1] == doctest::Approx(-2.0 * (1 - 0.1 * 0.01)).epsilon(1e-6));
    CHECK(ps.value(b).data[0] == doctest::Approx(3.0 + 0.1).epsilon(1e-6));
    CHECK(opt.step_count() == 1);
    opt.step(ps, lr);  // same gradient again: m_hat = g, v_hat = g^2 still
    CHECK(ps.value(b).data[0] == doctest::Approx(3.2).epsilon(1e-5));
}

TEST_CASE("global norm clipping scales gradients to the bound and reports the norm before") {
    ParamStore ps;
    const ParamId w = ps.add("w", 1, 2, true, ParamInit::kZeros);
    ps.finalize();
    ps.grad(w).data[0] = 3.0f;
    ps.grad(w).data[1] = 4.0f;
    CHECK(clip_grad_norm(ps, 1.0) == doctest::Approx(5.0));
    CHECK(grad_norm(ps) == doctest::Approx(1.0).epsilon(1e-5));
    CHECK(clip_grad_norm(ps, 10.0) == doctest::Approx(1.0).epsilon(1e-5));
    CHECK(grad_norm(ps) == doctest::Approx(1.0).epsilon(1e-5));
}

TEST_CASE("cosine schedule warms up linearly then decays to min_lr") {
    LrSchedule s{LrScheduleKind::kCosine, 1.0, 10, 110, 0.1};
    CHECK(s.at(0) == doctest::Approx(0.1));
    CHECK(s.at(9) == doctest::Approx(1.0));
    CHECK(s.at(10) == doctest::Approx(1.0));
    CHECK(s.at(60) == doctest::Approx(0.55));
    CHECK(s.at(110) == doctest::Approx(0.1));
    CHECK(s.at(500) == doctest::Approx(0.1));
    LrSchedule c{LrScheduleKind::kConstant, 0.3, 0, 1, 0};
    CHECK(c.at(1000) == doctest::Approx(0.3));
    CHECK(parse_lr_schedule("cosine") == LrScheduleKind::kCosine);
    CHECK_THROWS_AS(parse_lr_schedule("step"), Error);
}

TEST_CASE("param store finalize that cannot allocate throws ParamArenaOutOfMemory with its size") {
    ParamStore ps;
    // 2^46 floats (256 TiB): more than any process's address space.
    ps.add("huge.weight", int64_t{1} << 23, int64_t{1} << 23, true, ParamInit::kZeros);
    try {
        ps.finalize();
        FAIL("finalize allocated 256 TiB");
    } catch (const ParamArenaOutOfMemory& e) {
        CHECK(e.floats() == int64_t{1} << 46);
    }
    CHECK_FALSE(ps.finalized());
}
