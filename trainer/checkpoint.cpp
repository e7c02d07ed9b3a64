// Checkpoint writer/reader over the data/h5_file.h RAII layer (the only HDF5 user is
// data/h5_file.cpp).
#include "trainer/checkpoint.h"

#include <algorithm>
#include <cmath>
#include <system_error>

#include "gnn/core/hash.h"

namespace segrank {

namespace {
std::vector<std::string> split_path(const std::string& name) {
    std::vector<std::string> parts;
    std::string cur;
    for (char c : name) {
        if (c == '/') {
            if (!cur.empty()) parts.push_back(cur);
            cur.clear();
        } else {
            cur += c;
        }
    }
    if (!cur.empty()) parts.push_back(cur);
    SEGRANK_CHECK(!parts.empty(), "checkpoint: empty array name");
    return parts;
}

constexpr const char* kChecksumAttr = "checksum";
constexpr std::string_view kChecksumKind = "xxh3_64:";
// Root attribute of checkpoints whose attributes carry checksums ("<name>.checksum" beside each).
constexpr const char* kAttrChecksumsMarker = "attribute_checksums";
constexpr std::string_view kAttrChecksumSuffix = ".checksum";

// The checksum of an attribute's value: over its kind ("s" string, "i" int64) and its text, so a
// value that changes type changes its checksum too.
std::string attr_checksum(char kind, std::string_view text) {
    std::string bytes;
    bytes.reserve(text.size() + 2);
    bytes += kind;
    bytes += ':';
    bytes += text;
    return std::string(kChecksumKind) + hash_hex(xxh3_64(bytes.data(), bytes.size()));
}

void set_checked_attr(H5Group& g, const std::string& name, const std::string& value) {
    g.set_attr(name, value);
    g.set_attr(name + std::string(kAttrChecksumSuffix), attr_checksum('s', value));
}

void set_checked_attr(H5Group& g, const std::string& name, int64_t value) {
    g.set_attr(name, value);
    g.set_attr(name + std::string(kAttrChecksumSuffix), attr_checksum('i', std::to_string(value)));
}

void write_arena(H5Group& g, const ParamStore& store, std::span<const float> arena) {
    for (const ParamRef& r : store.refs()) {
        const auto part =
            arena.subspan(static_cast<size_t>(r.offset), static_cast<size_t>(r.size()));
        H5Dataset d = g.write<float>(r.name, {r.rows, r.cols}, part);
        CheckpointWriter::set_checksum(d, part.data(), part.size_bytes());
    }
}

// "[3, 4]" (an empty shape: "[]").
std::string shape_text(const std::vector<int64_t>& shape) {
    std::string s = "[";
    for (size_t i = 0; i < shape.size(); ++i) s += str(i ? ", " : "", shape[i]);
    return s + "]";
}

void read_arena(const H5Group& g, const ParamStore& store, std::span<float> arena,
                const std::string& where) {
    // Every entry of the group is a parameter of `store`: an extra one means another model (or an
    // edited file), whose other parameters would load into the wrong places.
    for (const std::string& name : g.children()) {
        bool known = false;
        for (const ParamRef& r : store.refs()) known = known || r.name == name;
        SEGRANK_CHECK(known, g.where(), "/", name, ": unexpected parameter '", name,
                      "': this model has no such parameter (checkpoint of another model, or an "
                      "edited file?)");
    }
    for (const ParamRef& r : store.refs()) {
        SEGRANK_CHECK(g.has(r.name) || r.name != "prior.weight", where,
                      ": parameter 'prior.weight' missing: the checkpoint was written without "
                      "model.hwmodel_prior (docs/model.md#analytical-prior), so it cannot be "
                      "loaded with the option on");
        SEGRANK_CHECK(g.has(r.name) || r.name != "config_cost.weight", where,
                      ": parameter 'config_cost.weight' missing: the checkpoint was written "
                      "without model.tile_cost_features (docs/model.md#tile-cost-features), so it "
                      "cannot be loaded with the option on");
        SEGRANK_CHECK(g.has(r.name), where, ": parameter '", r.name,
                      "' missing (checkpoint of another model?)");
        H5Dataset d = g.open_dataset(r.name);
        const auto shape = d.shape();
        SEGRANK_CHECK(shape.size() == 2 && shape[0] == r.rows && shape[1] == r.cols, d.where(),
                      ": shape mismatch for parameter '", r.name, "': expected [", r.rows, ", ",
                      r.cols, "], found ", shape_text(shape), " (checkpoint of another model?)");
        SEGRANK_CHECK(d.type() == H5Type::kF32, d.where(), ": parameter '", r.name,
                      "' is not float32 (corrupt or foreign file)");
        const auto part =
            arena.subspan(static_cast<size_t>(r.offset), static_cast<size_t>(r.size()));
        d.read<float>(part);
        CheckpointReader::verify_checksum(d, part.data(), part.size_bytes());
    }
}
}  // namespace

void CheckpointWriter::set_checksum(H5Dataset& d, const void* p, size_t n) {
    d.set_attr(kChecksumAttr, std::string(kChecksumKind) + hash_hex(xxh3_64(p, n)));
}

void CheckpointReader::verify_checksum(const H5Dataset& d, const void* p, size_t n) {
    const std::optional<std::string> stored = d.attr_string(kChecksumAttr);
    SEGRANK_CHECK(stored.has_value(), d.where(),
                  ": no checksum attribute (every dataset of a format_version ",
                  kCheckpointFormatVersion, " checkpoint has one): the checkpoint is corrupt");
    const std::string now = std::string(kChecksumKind) + hash_hex(xxh3_64(p, n));
    SEGRANK_CHECK(*stored == now, d.where(), ": checksum mismatch (stored ", *stored,
                  ", the data read gives ", now,
                  "): the checkpoint is corrupt (its bytes changed after it was written); use "
                  "another checkpoint or train again");
}

CheckpointWriter::CheckpointWriter(std::filesystem::path path)
    : path_(std::move(path)), out_(path_) {
    file_ = std::make_unique<H5File>(H5File::create(out_.temp_path()));
    H5Group root = file_->root();
    root.set_attr("format_version", kCheckpointFormatVersion);
    root.set_attr(kAttrChecksumsMarker, int64_t{1});
    set_checked_attr(root, "step", int64_t{0});
    set_checked_attr(root, "epoch", int64_t{0});
    root.create_group("extra");
}

CheckpointWriter::~CheckpointWriter() {
    file_.reset();  // closed first; out_ then removes the temporary file unless committed
}

void CheckpointWriter::put_params(const ParamStore& store, const AdamW* opt) {
    SEGRANK_CHECK(store.finalized(), "checkpoint: the ParamStore is not finalized");
    H5Group root = file_->root();
    H5Group params = root.create_group("params");
    write_arena(params, store, store.values());
    if (opt) {
        H5Group m = root.create_group("adam_m");
        write_arena(m, store, opt->m());
        H5Group v = root.create_group("adam_v");
        write_arena(v, store, opt->v());
        set_checked_attr(root, "adam_step", opt->step_count());
    }
}

void CheckpointWriter::put_state(int64_t step, int64_t epoch) {
    H5Group root = file_->root();
    set_checked_attr(root, "step", step);
    set_checked_attr(root, "epoch", epoch);
}

std::pair<H5Group, std::string> CheckpointWriter::extra_parent(const std::string& name) {
    const auto parts = split_path(name);
    H5Group g = file_->root().open_group("extra");
    for (size_t i = 0; i + 1 < parts.size(); ++i)
        g = g.has(parts[i]) ? g.open_group(parts[i]) : g.create_group(parts[i]);
    return {std::move(g), parts.back()};
}

void CheckpointWriter::put_attr(const std::string& name, const std::string& value) {
    H5Group extra = file_->root().open_group("extra");
    set_checked_attr(extra, name, value);
}

void CheckpointWriter::put_attr(const std::string& name, int64_t value) {
    H5Group extra = file_->root().open_group("extra");
    set_checked_attr(extra, name, value);
}

void CheckpointWriter::commit() {
    SEGRANK_CHECK(file_ != nullptr, "checkpoint ", path_.string(), ": commit() called twice");
    file_->close();
    file_.reset();
    out_.commit();
}

CheckpointReader::CheckpointReader(const std::filesystem::path& path) : path_(path) {
    file_ = std::make_unique<H5File>(H5File::open_read(path));
    H5Group root = file_->root();
    // Another segrank HDF5 file (a graph store names its format) is not an old checkpoint.
    // A variable-length string is never read (H5Object::attr_string): an earlier graph store's.
    SEGRANK_CHECK(!root.attr_is_variable_string("format"), path.string(),
                  ": not a segrank checkpoint (an HDF5 file with a variable-length 'format' "
                  "attribute, e.g. a graph store of format_version 2; a checkpoint is "
                  "RUN_DIR/best.ckpt.h5 or last.ckpt.h5)");
    const auto format = root.attr_string("format");
    SEGRANK_CHECK(!format.has_value(), path.string(),
                  ": not a segrank checkpoint (an HDF5 file of format '", format.value_or(""),
                  "'; a checkpoint is RUN_DIR/best.ckpt.h5 or last.ckpt.h5)");
    const auto v = root.attr_int("format_version");
    SEGRANK_CHECK(v.has_value(), path.string(),
                  ": not a segrank checkpoint (no format_version attribute)");
    SEGRANK_CHECK(*v != 1, path.string(),
                  ": checkpoint format_version 1, written before checkpoints carried checksums; "
                  "this build reads format_version ",
                  kCheckpointFormatVersion,
                  " only (a corrupt parameter would load silently): train again, or load it with "
                  "the segrank version that wrote it");
    SEGRANK_CHECK(*v != 2, path.string(),
                  ": checkpoint format_version 2, whose string attributes live in HDF5's global "
                  "heap (no checksum: one flipped bit there hangs or crashes the reader); this "
                  "build reads format_version ",
                  kCheckpointFormatVersion,
                  " only: train again, or load it with the segrank version that wrote it");
    SEGRANK_CHECK(*v == kCheckpointFormatVersion, path.string(), ": checkpoint format_version ", *v,
                  ", this build reads ", kCheckpointFormatVersion);
    version_ = *v;
    // Every format_version 3 checkpoint was written with attribute checksums: one without had
    // the marker removed, and its attributes would load unverified.
    attrs_checked_ = root.has_attr(kAttrChecksumsMarker);
    SEGRANK_CHECK(attrs_checked_, path.string(), ": no '", kAttrChecksumsMarker,
                  "' attribute (every format_version ", kCheckpointFormatVersion,
                  " checkpoint has one): the checkpoint is corrupt; use another checkpoint or "
                  "train again");
    step_ = checked_attr_int(root, "/", "step").value_or(0);
    epoch_ = checked_attr_int(root, "/", "epoch").value_or(0);
    // A training step is below 2^31 (train.steps' bound, the steps a HistoryTable records): a
    // larger one is refused here, before a resume rewrites anything, not steps later (a negative
    // one is named by validate_checkpoint_state).
    SEGRANK_CHECK(step_ <= 2147483647, path.string(), ": attribute /step = ", step_,
                  ", expected 0 to 2147483647 (the checkpoint is corrupt or forged; use another "
                  "checkpoint or train again)");
}

void CheckpointReader::verify_attr(const H5Group& g, const std::string& group_path,
                                   const std::string& name, char kind,
                                   const std::optional<std::string>& text) const {
    if (!attrs_checked_) return;
    const std::string where = str(path_.string(), ": attribute ", group_path, name);
    const std::optional<std::string> stored =
        g.attr_string(name + std::string(kAttrChecksumSuffix));
    if (!text) {
        SEGRANK_CHECK(!stored.has_value(), where,
                      ": absent but its checksum is stored: the checkpoint is corrupt (its "
                      "attributes changed after it was written); use another checkpoint or train "
                      "again");
        return;
    }
    SEGRANK_CHECK(stored.has_value(), where, ": no ", name, kAttrChecksumSuffix,
                  " attribute (every attribute of a checkpoint with ", kAttrChecksumsMarker,
                  " has one): the checkpoint is corrupt");
    const std::string now = attr_checksum(kind, *text);
    SEGRANK_CHECK(*stored == now, where, ": checksum mismatch (stored ", *stored,
                  ", the value read gives ", now,
                  "): the checkpoint is corrupt (its attributes changed after it was written); use "
                  "another checkpoint or train again");
}

std::optional<std::string> CheckpointReader::checked_attr_string(const H5Group& g,
                                                                 const std::string& group_path,
                                                                 const std::string& name) const {
    std::optional<std::string> v = g.attr_string(name);
    verify_attr(g, group_path, name, 's', v);
    return v;
}

std::optional<int64_t> CheckpointReader::checked_attr_int(const H5Group& g,
                                                          const std::string& group_path,
                                                          const std::string& name) const {
    const std::optional<int64_t> v = g.attr_int(name);
    verify_attr(g, group_path, name, 'i',
                v ? std::optional<std::string>(std::to_string(*v)) : std::nullopt);
    return v;
}

std::string CheckpointReader::parameters_id() const {
    const H5Group root = file_->root();
    SEGRANK_CHECK(root.has("params"), path_.string(), ": no /params group");
    const H5Group params = root.open_group("params");
    std::vector<std::string> names = params.children();
    std::sort(names.begin(), names.end());
    std::string text = str("step=", step_, ";");
    for (const std::string& name : names) {
        const std::optional<std::string> sum = params.open_dataset(name).attr_string(kChecksumAttr);
        SEGRANK_CHECK(sum.has_value(), path_.string(), ": dataset /params/", name,
                      ": no checksum attribute: the checkpoint is corrupt");
        text += str(name, "=", *sum, ";");
    }
    return std::string(kChecksumKind) + hash_hex(xxh3_64(text.data(), text.size()));
}

void CheckpointReader::load_params(ParamStore& store, AdamW* opt) const {
    store.finalize();
    H5Group root = file_->root();
    SEGRANK_CHECK(root.has("params"), path_.string(), ": no /params group");
    read_arena(root.open_group("params"), store, store.values(), path_.string());
    if (opt) {
        SEGRANK_CHECK(root.has("adam_m") && root.has("adam_v"), path_.string(),
                      ": no AdamW moments (/adam_m, /adam_v) to resume from");
        read_arena(root.open_group("adam_m"), store, opt->m(), path_.string());
        read_arena(root.open_group("adam_v"), store, opt->v(), path_.string());
        opt->set_step_count(checked_attr_int(root, "/", "adam_step").value_or(0));
    }
    validate_loaded_checkpoint(path_, store, opt, step_, epoch_);
}

void validate_loaded_checkpoint(const std::filesystem::path& file, const ParamStore& store,
                                const AdamW* opt, int64_t step, int64_t epoch) {
    const std::string f = file.string();
    SEGRANK_CHECK(step >= 0, f, ": attribute /step = ", step, " is negative");
    SEGRANK_CHECK(epoch >= 0, f, ": attribute /epoch = ", epoch, " is negative");
    // A NaN or infinite parameter would show up only as a non-finite loss or score naming no file.
    const std::span<const float> w = store.values();
    for (const ParamRef& r : store.refs())
        for (int64_t k = 0; k < r.size(); ++k) {
            const float x = w[static_cast<size_t>(r.offset + k)];
            SEGRANK_CHECK(std::isfinite(x), f, ": dataset /params/", r.name, " entry ", k, " is ",
                          x, " (parameters must be finite)");
        }
    if (!opt) return;
    SEGRANK_CHECK(opt->step_count() >= 0, f, ": attribute /adam_step = ", opt->step_count(),
                  " is negative");
    // The trainer takes one AdamW step per training step (and none before the first), so the
    // optimizer's count cannot exceed the training step it is saved with.
    SEGRANK_CHECK(opt->step_count() <= step, f, ": attribute /adam_step = ", opt->step_count(),
                  ": expected at most /step = ", step, " (one optimizer step per training step)");
    const std::span<const float> m = opt->m(), v = opt->v();
    for (const ParamRef& r : store.refs()) {
        for (int64_t k = 0; k < r.size(); ++k) {
            const size_t i = static_cast<size_t>(r.offset + k);
            SEGRANK_CHECK(std::isfinite(m[i]), f, ": dataset /adam_m/", r.name, " entry ", k,
                          " is ", m[i], " (AdamW first moments must be finite)");
            SEGRANK_CHECK(std::isfinite(v[i]) && v[i] >= 0, f, ": dataset /adam_v/", r.name,
                          " entry ", k, " is ", v[i],
                          " (AdamW second moments must be finite and >= 0)");
        }
    }
}

H5Dataset CheckpointReader::open_extra(const std::string& name) const {
    const auto parts = split_path(name);
    H5Group g = file_->root().open_group("extra");
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
        SEGRANK_CHECK(g.has(parts[i]), path_.string(), ": no /extra/", name);
        g = g.open_group(parts[i]);
    }
    SEGRANK_CHECK(g.has(parts.back()), path_.string(), ": no /extra/", name);
    return g.open_dataset(parts.back());
}

bool CheckpointReader::has_array(const std::string& name) const {
    const auto parts = split_path(name);
    H5Group g = file_->root().open_group("extra");
    for (size_t i = 0; i + 1 < parts.size(); ++i) {
        if (!g.has(parts[i])) return false;
        g = g.open_group(parts[i]);
    }
    return g.has(parts.back());
}

std::vector<int64_t> CheckpointReader::array_shape(const std::string& name) const {
    return open_extra(name).shape();
}

std::optional<std::string> CheckpointReader::attr_string(const std::string& name) const {
    return checked_attr_string(file_->root().open_group("extra"), "/extra/", name);
}

std::optional<int64_t> CheckpointReader::attr_int(const std::string& name) const {
    return checked_attr_int(file_->root().open_group("extra"), "/extra/", name);
}

}  // namespace segrank
