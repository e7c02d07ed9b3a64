// Checkpoint round trip: parameters, AdamW moments, step/epoch, extra arrays/attributes; the
// temporary file is never left behind; mismatched models are rejected by parameter name.
#include "trainer/checkpoint.h"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "gnn/model.h"
#include "tests/support/small_model.h"
#include "tests/support/test_paths.h"

using namespace segrank;

namespace {
using test::small_model;
}  // namespace

TEST_CASE("checkpoint round trip restores parameters, moments, step, epoch and extra data") {
    const auto dir = test::scratch_dir("checkpoint_roundtrip");
    const auto path = dir / "ckpt.h5";
    Model a(small_model());
    a.params().initialize(3);
    AdamW opt_a(a.params(), AdamWConfig{});
    for (float& g : a.params().grads()) g = 0.25f;
    opt_a.step(a.params(), 1e-2f);
    {
        CheckpointWriter w(path);
        w.put_params(a.params(), &opt_a);
        w.put_state(17, 2);
        std::vector<double> mean = {1.5, -2.0, 3.25};
        w.put_array<double>("normalizer/mean", {3}, mean);
        w.put_attr("config_toml", std::string("[model]\nhidden = 4\n"));
        w.put_attr("world_size", int64_t{2});
        CHECK_FALSE(std::filesystem::exists(path));  // nothing visible before commit
        w.commit();
    }
    CHECK(std::filesystem::exists(path));
    CHECK(std::distance(std::filesystem::directory_iterator(dir), {}) ==
          1);  // no temporary file left

    Model b(small_model());
    AdamW opt_b(b.params(), AdamWConfig{});
    CheckpointReader r(path);
    CHECK(r.step() == 17);
    CHECK(r.epoch() == 2);
    CHECK(r.format_version() == kCheckpointFormatVersion);
    r.load_params(b.params(), &opt_b);
    for (int64_t i = 0; i < a.params().total_size(); ++i) {
        CHECK(b.params().values()[i] == a.params().values()[i]);
        CHECK(opt_b.m()[i] == opt_a.m()[i]);
        CHECK(opt_b.v()[i] == opt_a.v()[i]);
    }
    CHECK(opt_b.step_count() == 1);
    CHECK(r.has_array("normalizer/mean"));
    CHECK_FALSE(r.has_array("normalizer/std"));
    CHECK(r.get_array<double>("normalizer/mean")[2] == 3.25);
    CHECK(r.array_shape("normalizer/mean") == std::vector<int64_t>{3});
    CHECK(r.attr_string("config_toml").value() == "[model]\nhidden = 4\n");
    CHECK(r.attr_int("world_size").value() == 2);
}

TEST_CASE(
    "an uncommitted checkpoint leaves no file and a checkpoint of another model is rejected") {
    const auto dir = test::scratch_dir("checkpoint_errors");
    {
        CheckpointWriter w(dir / "torn.h5");
        Model a(small_model());
        w.put_params(a.params(), nullptr);
    }  // no commit: e.g. an exception while writing
    CHECK_FALSE(std::filesystem::exists(dir / "torn.h5"));
    CHECK(std::filesystem::is_empty(dir));  // the temporary file is gone too

    Model a(small_model());
    a.params().initialize(1);
    {
        CheckpointWriter w(dir / "a.h5");
        w.put_params(a.params(), nullptr);
        w.commit();
    }
    ModelConfig other = small_model();
    other.hidden = 6;
    Model b(other);
    CheckpointReader r(dir / "a.h5");
    CHECK_THROWS_WITH_AS(r.load_params(b.params(), nullptr), doctest::Contains("shape mismatch"),
                         Error);
    AdamW opt(a.params(), AdamWConfig{});
    CHECK_THROWS_WITH_AS(r.load_params(a.params(), &opt), doctest::Contains("moments"), Error);
}

TEST_CASE(
    "prior.weight round-trips, an old checkpoint loads with the prior off and is refused "
    "with it on") {
    const auto dir = test::scratch_dir("checkpoint_prior");
    ModelConfig with = small_model();
    with.hwmodel_prior = true;
    Model a(with);
    a.params().initialize(2);
    const ParamId w = *a.params().find("prior.weight");
    a.params().value(w).at(0, 0) = -0.625f;
    Model old(small_model());  // a model (and checkpoint) from before the option
    old.params().initialize(2);
    for (const auto& [m, name] : {std::pair{&a, "prior.h5"}, std::pair{&old, "old.h5"}}) {
        CheckpointWriter wr(dir / name);
        wr.put_params(m->params(), nullptr);
        wr.commit();
    }
    Model b(with);
    CheckpointReader(dir / "prior.h5").load_params(b.params(), nullptr);
    CHECK(b.params().value(*b.params().find("prior.weight")).at(0, 0) == -0.625f);

    Model off(small_model());
    CheckpointReader(dir / "old.h5").load_params(off.params(), nullptr);
    for (int64_t i = 0; i < old.params().total_size(); ++i)
        CHECK(off.params().values()[i] == old.params().values()[i]);

    Model on(with);
    CHECK_THROWS_WITH_AS(CheckpointReader(dir / "old.h5").load_params(on.params(), nullptr),
                         doctest::Contains("written without model.hwmodel_prior"), Error);
}

TEST_CASE(
    "config_cost.weight round-trips, a tile checkpoint without it loads with tile_cost_features "
    "off and is refused with it on, naming the key") {
    const auto dir = test::scratch_dir("checkpoint_tile_cost");
    ModelConfig without = small_model();
    without.task = Task::kTile;
    ModelConfig with = without;
    with.tile_cost_features = true;
    Model a(with), old(without);
    a.params().initialize(2);
    old.params().initialize(2);
    const ParamRef& w = a.params().ref(*a.params().find("config_cost.weight"));
    a.params().values()[static_cast<size_t>(w.offset + 3)] = -0.375f;
    for (const auto& [m, name] : {std::pair{&a, "cost.h5"}, std::pair{&old, "old.h5"}}) {
        CheckpointWriter wr(dir / name);
        wr.put_params(m->params(), nullptr);
        wr.commit();
    }
    Model b(with);
    CheckpointReader(dir / "cost.h5").load_params(b.params(), nullptr);
    for (int64_t i = 0; i < a.params().total_size(); ++i)
        CHECK(b.params().values()[i] == a.params().values()[i]);
    Model off(without);
    CheckpointReader(dir / "old.h5").load_params(off.params(), nullptr);
    for (int64_t i = 0; i < old.params().total_size(); ++i)
        CHECK(off.params().values()[i] == old.params().values()[i]);
    Model on(with);
    CHECK_THROWS_WITH_AS(CheckpointReader(dir / "old.h5").load_params(on.params(), nullptr),
                         doctest::Contains("written without model.tile_cost_features"), Error);
}

namespace {
// Flips `count` bytes of the first occurrence of `pattern` in `file`; false when not found.
bool flip_bytes_of(const std::filesystem::path& file, const std::string& pattern, size_t count) {
    std::string bytes = test::read_file_text(file);
    const size_t at = bytes.find(pattern);
    if (at == std::string::npos) return false;
    for (size_t i = 0; i < count && i < pattern.size(); ++i) bytes[at + i] ^= 0x5a;
    std::ofstream(file, std::ios::binary | std::ios::trunc) << bytes;
    return true;
}

template <typename T>
std::string bytes_of(const T* p, size_t n) {
    return std::string(reinterpret_cast<const char*>(p), n * sizeof(T));
}

std::string load_error(const std::filesystem::path& path, bool with_moments) {
    try {
        Model b(small_model());
        AdamW opt(b.params(), AdamWConfig{});
        CheckpointReader r(path);
        r.load_params(b.params(), with_moments ? &opt : nullptr);
        (void)r.get_array<double>("normalizer/mean");
    } catch (const Error& e) {
        return e.what();
    }
    return "";
}
}  // namespace

TEST_CASE(
    "bytes flipped inside a parameter, a moment or an extra array of a checkpoint fail the load "
    "naming the file and the dataset" *
    doctest::test_suite("hostile")) {
    const auto dir = test::scratch_dir("checkpoint_bitflip");
    const auto path = dir / "ckpt.h5";
    Model a(small_model());
    a.params().initialize(3);
    AdamW opt(a.params(), AdamWConfig{});
    float grad = 0.25f;  // distinct gradients: each moment dataset holds bytes of its own
    for (float& g : a.params().grads()) g = (grad += 0.001f);
    opt.step(a.params(), 1e-2f);
    const ParamRef& p0 = a.params().refs().front();
    float* w = a.params().values().data() + p0.offset;
    for (int64_t i = 0; i < p0.size(); ++i) w[i] = 7.0f + 1.2345f * static_cast<float>(i);
    const std::vector<double> mean = {1.5, -2.0, 3.25, 1234.5678, -9876.54321};
    auto write = [&] {
        CheckpointWriter cw(path);
        cw.put_params(a.params(), &opt);
        cw.put_state(1, 0);  // the step of the optimizer's one step
        cw.put_array<double>("normalizer/mean", {5}, mean);
        cw.commit();
    };
    write();
    CHECK(load_error(path, true).empty());

    REQUIRE(flip_bytes_of(path, bytes_of(w, static_cast<size_t>(p0.size())), 12));
    std::string msg = load_error(path, false);
    CHECK(msg.find(path.string() + ":/params/" + p0.name + ": checksum mismatch") == 0);
    CHECK(msg.find("the checkpoint is corrupt") != std::string::npos);

    write();
    const ParamRef& last = a.params().refs().back();
    REQUIRE(flip_bytes_of(
        path, bytes_of(opt.v().data() + last.offset, static_cast<size_t>(last.size())), 4));
    CHECK(load_error(path, false).empty());  // the moments are not read without an optimizer
    CHECK(load_error(path, true)
              .find(path.string() + ":/adam_v/" + last.name + ": checksum mismatch") == 0);

    write();
    REQUIRE(flip_bytes_of(path, bytes_of(mean.data() + 3, 2), 3));
    CHECK(
        load_error(path, true).find(path.string() + ":/extra/normalizer/mean: checksum mismatch") ==
        0);
}

TEST_CASE("a format_version 1 checkpoint (no checksums) is refused with a message saying why" *
          doctest::test_suite("hostile")) {
    const auto dir = test::scratch_dir("checkpoint_v1");
    const auto path = dir / "ckpt.h5";
    {
        Model a(small_model());
        CheckpointWriter cw(path);
        cw.put_params(a.params(), nullptr);
        cw.commit();
    }
    {
        H5File f = H5File::open_write(path);
        f.root().set_attr("format_version", int64_t{1});
    }
    try {
        CheckpointReader r(path);
        FAIL("a format_version 1 checkpoint was opened");
    } catch (const Error& e) {
        CHECK(std::string(e.what()) ==
              path.string() +
                  ": checkpoint format_version 1, written before checkpoints carried checksums; "
                  "this build reads format_version 3 only (a corrupt parameter would load "
                  "silently): train again, or load it with the segrank version that wrote it");
    }
}

TEST_CASE("a graph store given as a checkpoint is named as such, not as an old checkpoint" *
          doctest::test_suite("hostile")) {
    const auto path = test::scratch_dir("checkpoint_store") / "layout_xla_random_train.h5";
    {
        H5File f = H5File::create(path);
        f.root().set_attr("format", std::string("segrank-graph-store"));
        f.root().set_attr("format_version", int64_t{1});
    }
    try {
        CheckpointReader r(path);
        FAIL("a graph store was opened as a checkpoint");
    } catch (const Error& e) {
        CHECK(std::string(e.what()) ==
              path.string() +
                  ": not a segrank checkpoint (an HDF5 file of format 'segrank-graph-store'; a "
                  "checkpoint is RUN_DIR/best.ckpt.h5 or last.ckpt.h5)");
    }
}

TEST_CASE(
    "an attribute edited after the checkpoint was written (config_toml, step, adam_step) is "
    "refused naming the file and the attribute" *
    doctest::test_suite("hostile")) {
    const auto dir = test::scratch_dir("checkpoint_attr_checksum");
    const auto path = dir / "ckpt.h5";
    Model a(small_model());
    a.params().initialize(3);
    AdamW opt(a.params(), AdamWConfig{});
    {
        CheckpointWriter w(path);
        w.put_params(a.params(), &opt);
        w.put_state(7, 1);
        w.put_attr("config_toml", std::string("[model]\nactivation = \"gelu\"\n"));
        w.put_attr("world_size", int64_t{2});
        w.commit();
    }
    {
        const CheckpointReader r(path);
        CHECK(r.attributes_checked());
        CHECK(r.attr_string("config_toml") == "[model]\nactivation = \"gelu\"\n");
        CHECK(r.attr_int("world_size") == 2);
        CHECK_FALSE(r.attr_string("absent").has_value());
    }
    auto expect_refused = [&](const std::string& attribute, auto&& read) {
        try {
            read();
            FAIL("an edited attribute was read: ", attribute);
        } catch (const Error& e) {
            const std::string msg = e.what();
            INFO(msg);
            CHECK(msg.rfind(path.string() + ": attribute " + attribute + ": ", 0) == 0);
        }
    };
    {
        H5File f = H5File::open_write(path);
        f.root().open_group("extra").set_attr("config_toml",
                                              std::string("[model]\nactivation = \"relu\"\n"));
    }
    expect_refused("/extra/config_toml",
                   [&] { (void)CheckpointReader(path).attr_string("config_toml"); });
    {
        H5File f = H5File::open_write(path);
        f.root().open_group("extra").set_attr("world_size", int64_t{3});
        f.root().open_group("extra").set_attr("unsigned", std::string("no checksum"));
    }
    expect_refused("/extra/world_size",
                   [&] { (void)CheckpointReader(path).attr_int("world_size"); });
    expect_refused("/extra/unsigned",
                   [&] { (void)CheckpointReader(path).attr_string("unsigned"); });
    {
        H5File f = H5File::open_write(path);
        f.root().set_attr("adam_step", int64_t{1000});
    }
    expect_refused("/adam_step", [&] {
        Model b(small_model());
        AdamW ob(b.params(), AdamWConfig{});
        CheckpointReader(path).load_params(b.params(), &ob);
    });
    {
        H5File f = H5File::open_write(path);
        f.root().set_attr("step", int64_t{8});
    }
    expect_refused("/step", [&] { CheckpointReader r(path); });
}

TEST_CASE("a checkpoint without its attribute_checksums marker is refused as corrupt" *
          doctest::test_suite("hostile")) {
    const auto path = test::scratch_dir("checkpoint_attr_old") / "ckpt.h5";
    {
        H5File f = H5File::create(path);
        f.root().set_attr("format_version", kCheckpointFormatVersion);
        f.root().set_attr("step", int64_t{5});
        f.root().set_attr("epoch", int64_t{1});
        f.root().create_group("extra").set_attr("config_toml", std::string("[train]\n"));
    }
    CHECK_THROWS_WITH_AS(CheckpointReader r(path),
                         (path.string() + ": no 'attribute_checksums' attribute (every "
                                          "format_version 3 checkpoint has one): the checkpoint "
                                          "is corrupt; use another checkpoint or train again")
                             .c_str(),
                         Error);
}

TEST_CASE(
    "a checkpoint whose /step is beyond 2^31 - 1 (checksum valid) is refused on open, naming "
    "the file and the attribute") {
    const auto dir = test::scratch_dir("ckpt_step_bound");
    Model a(small_model());
    a.params().initialize(3);
    for (const int64_t step : {int64_t{1} << 62, int64_t{2147483648}}) {
        const auto path = dir / (std::to_string(step) + ".h5");
        {
            CheckpointWriter w(path);
            w.put_params(a.params(), nullptr);
            w.put_state(step, 0);
            w.commit();
        }
        INFO(step);
        std::string message;
        try {
            CheckpointReader r(path);
        } catch (const Error& e) {
            message = e.what();
        }
        CHECK(message.find(path.string() + ": attribute /step = " + std::to_string(step) +
                           ", expected 0 to 2147483647") != std::string::npos);
    }
    const auto ok = dir / "ok.h5";
    {
        CheckpointWriter w(ok);
        w.put_params(a.params(), nullptr);
        w.put_state(2147483647, 0);
        w.commit();
    }
    CHECK(CheckpointReader(ok).step() == 2147483647);
}
