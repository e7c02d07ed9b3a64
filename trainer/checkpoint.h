// Checkpoints in HDF5 (docs/files.md#checkpoints): parameters by name, AdamW moments, step, epoch,
// format version, plus free-form arrays/attributes other parts add (normalizer statistics, config
// text, history shards). Written to a temporary file and renamed on commit (util/atomic_file.h), so
// a crash never leaves a torn checkpoint.
// Layout (h5py-readable):
//   /                attrs format_version (int), step (int), epoch (int), adam_step (int)
//   /params/<name>   float32 [rows, cols] per ParamRef (e.g. /params/sage0.w_self)
//   /adam_m/<name>, /adam_v/<name>   AdamW moments, same shapes (when an optimizer is saved)
//   /extra/<path>    free-form datasets (put_array) ; attributes on /extra (put_attr)
// Every dataset carries a string attribute checksum = "xxh3_64:<16 hex digits>" over its bytes
// (format_version 2), verified whenever it is read. Every attribute the loader trusts (step, epoch,
// adam_step on /, everything put_attr writes on /extra: config_toml, data_fingerprint, task, ...)
// carries a sibling string attribute "<name>.checksum" = "xxh3_64:<hex>" over "s:<text>" (strings)
// or "i:<decimal>" (int64), verified on every read; the root attribute attribute_checksums = 1
// says so; a format_version 3 checkpoint without it is refused.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "data/h5_file.h"
#include "gnn/core/check.h"
#include "gnn/optim.h"
#include "gnn/param_store.h"
#include "util/atomic_file.h"

namespace segrank {

/// 2: every dataset carries a checksum attribute (1: none); 3: also the HDF5 1.10 file format
/// (checksummed metadata) and fixed-length string attributes. 1 and 2 are refused, see
/// docs/files.md#checkpoints.
inline constexpr int64_t kCheckpointFormatVersion = 3;

/// Builds one checkpoint. Nothing is visible at `path` until commit().
class CheckpointWriter {
public:
    /// Creates the temporary file "<path>.tmp-<pid>" (parent folders must exist). Throws
    /// segrank::Error on I/O failure or when `path` is a directory.
    explicit CheckpointWriter(std::filesystem::path path);
    ~CheckpointWriter();  ///< removes the temporary file when commit() was not reached
    CheckpointWriter(const CheckpointWriter&) = delete;
    CheckpointWriter& operator=(const CheckpointWriter&) = delete;

    /// Writes every parameter of the store, and the AdamW moments and step when opt is non-null.
    void put_params(const ParamStore& store, const AdamW* opt);
    /// Training position.
    void put_state(int64_t step, int64_t epoch);
    /// Free-form dataset under /extra; `name` may contain '/' (groups are created), e.g.
    /// "normalizer/mean". shape: rank 1-3, product = data.size().
    template <typename T>
    void put_array(const std::string& name, const std::vector<int64_t>& shape,
                   std::span<const T> data) {
        auto [group, leaf] = extra_parent(name);
        H5Dataset d = group.write<T>(leaf, shape, data);
        set_checksum(d, data.data(), data.size_bytes());
    }
    /// Free-form attribute on /extra (e.g. "config_toml" -> the effective config text).
    void put_attr(const std::string& name, const std::string& value);
    void put_attr(const std::string& name, int64_t value);
    /// Closes the file and renames it to `path` (replacing an older checkpoint atomically).
    void commit();

    /// Writes the checksum attribute of `d` over its n bytes at p (what every dataset carries).
    static void set_checksum(H5Dataset& d, const void* p, size_t n);

private:
    std::pair<H5Group, std::string> extra_parent(const std::string& name);
    std::filesystem::path path_;
    AtomicOutput out_;              // declared before file_: the file is closed before its removal
    std::unique_ptr<H5File> file_;  // null once committed
};

/// The checks of a loaded training state, after reading (CheckpointReader::load_params calls it):
/// step and epoch >= 0, every parameter (/params) finite and, with `opt`, its step count in [0,
/// step] (one AdamW step per training step), every first moment (/adam_m) finite and every second
/// moment (/adam_v) finite and >= 0 (a NaN or negative one would show up only later, as a
/// non-finite loss naming no file). Throws segrank::Error naming `file`, the dataset
/// (/adam_m/<parameter>) or attribute and the entry.
void validate_loaded_checkpoint(const std::filesystem::path& file, const ParamStore& store,
                                const AdamW* opt, int64_t step, int64_t epoch);

/// Reads a checkpoint written by CheckpointWriter.
class CheckpointReader {
public:
    /// Opens and checks the format version. Throws segrank::Error naming the file otherwise (a
    /// format_version 1 checkpoint, written before datasets carried checksums, included).
    explicit CheckpointReader(const std::filesystem::path& path);

    int64_t step() const { return step_; }
    int64_t epoch() const { return epoch_; }
    int64_t format_version() const { return version_; }
    /// Copies every parameter by name into the store (and moments into opt when non-null). Throws
    /// segrank::Error naming the parameter when it is missing or its shape differs (a checkpoint of
    /// another model), or when opt is requested but the checkpoint has no moments.
    void load_params(ParamStore& store, AdamW* opt) const;
    bool has_array(const std::string& name) const;
    /// Shape of /extra/<name>. Throws when absent.
    std::vector<int64_t> array_shape(const std::string& name) const;
    /// Contents of /extra/<name>. Throws when absent, of another element type, or when its
    /// checksum is missing or does not match (naming the file and the dataset).
    template <typename T>
    std::vector<T> get_array(const std::string& name) const {
        const H5Dataset d = open_extra(name);
        SEGRANK_CHECK(d.type() == h5_type_of<T>(), d.where(),
                      ": element type differs from the one "
                      "this checkpoint format stores there (corrupt or foreign file)");
        std::vector<T> v = d.read<T>();
        verify_checksum(d, v.data(), v.size() * sizeof(T));
        return v;
    }
    /// Throws segrank::Error naming the file and the dataset when `d` has no checksum attribute or
    /// when its value is not the checksum of the n bytes at p (the dataset as read).
    static void verify_checksum(const H5Dataset& d, const void* p, size_t n);
    /// Attribute `name` of /extra (nullopt when absent). Throws segrank::Error naming the file and
    /// the attribute when its checksum is missing or does not match the value read, or when the
    /// attribute is absent but its checksum is stored.
    std::optional<std::string> attr_string(const std::string& name) const;
    std::optional<int64_t> attr_int(const std::string& name) const;
    /// The identity of the model this checkpoint holds: "xxh3_64:<16 hex digits>" over its /step
    /// and the name and stored checksum of every /params dataset (the checksums cover the values;
    /// nothing is read beyond attributes). Equal for a copy or a moved file, different after any
    /// further training step. Throws segrank::Error naming the file when /params is missing or a
    /// parameter has no checksum.
    std::string parameters_id() const;
    /// True for every checkpoint opened (a format_version 3 checkpoint without attribute checksums
    /// is refused).
    bool attributes_checked() const { return attrs_checked_; }

private:
    void verify_attr(const H5Group& g, const std::string& group_path, const std::string& name,
                     char kind, const std::optional<std::string>& text) const;
    std::optional<std::string> checked_attr_string(const H5Group& g, const std::string& group_path,
                                                   const std::string& name) const;
    std::optional<int64_t> checked_attr_int(const H5Group& g, const std::string& group_path,
                                            const std::string& name) const;
    H5Dataset open_extra(const std::string& name) const;
    std::filesystem::path path_;
    std::unique_ptr<H5File> file_;
    int64_t step_ = 0, epoch_ = 0, version_ = 0;
    bool attrs_checked_ = false;
};

}  // namespace segrank
