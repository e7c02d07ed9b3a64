// Attributes of HDF5 groups and datasets (data/h5_file.h): scalar int64 and fixed-length UTF-8
// string.
#include <cstring>

#include "data/h5_file.h"
#include "data/h5_internal.h"

namespace segrank {

using namespace h5detail;

// ---------------------------------------------------------------------------------------------
// Attributes

bool H5Object::has_attr(const std::string& name) const {
    return h5_check(H5Aexists(id(), name.c_str()), where_, "H5Aexists") > 0;
}

void H5Object::set_attr(const std::string& name, const std::string& value) {
    if (has_attr(name)) h5_check(H5Adelete(id(), name.c_str()), where_, "H5Adelete");
    // Fixed length, in the object header: a variable-length string would live in the global heap,
    // which has no checksum (H5Object::attr_string).
    H5Handle type(h5_check(H5Tcopy(H5T_C_S1), where_, "H5Tcopy"));
    h5_check(H5Tset_size(type.get(), value.size() + 1), where_, "H5Tset_size");
    h5_check(H5Tset_strpad(type.get(), H5T_STR_NULLTERM), where_, "H5Tset_strpad");
    h5_check(H5Tset_cset(type.get(), H5T_CSET_UTF8), where_, "H5Tset_cset");
    H5Handle space(h5_check(H5Screate(H5S_SCALAR), where_, "H5Screate"));
    H5Handle a(
        h5_check(H5Acreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                 where_ + " attribute '" + name + "'", "H5Acreate2"));
    h5_check(H5Awrite(a.get(), type.get(), value.c_str()), where_ + " attribute '" + name + "'",
             "H5Awrite");
}

void H5Object::set_attr(const std::string& name, int64_t value) {
    if (has_attr(name)) h5_check(H5Adelete(id(), name.c_str()), where_, "H5Adelete");
    H5Handle space(h5_check(H5Screate(H5S_SCALAR), where_, "H5Screate"));
    H5Handle a(h5_check(
        H5Acreate2(id(), name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
        where_ + " attribute '" + name + "'", "H5Acreate2"));
    h5_check(H5Awrite(a.get(), H5T_NATIVE_INT64, &value), where_ + " attribute '" + name + "'",
             "H5Awrite");
}

std::optional<std::string> H5Object::attr_string(const std::string& name) const {
    if (!has_attr(name)) return std::nullopt;
    const std::string w = where_ + " attribute '" + name + "'";
    H5Handle a(h5_check(H5Aopen(id(), name.c_str(), H5P_DEFAULT), w, "H5Aopen"));
    H5Handle type(h5_check(H5Aget_type(a.get()), w, "H5Aget_type"));
    SEGRANK_CHECK(H5Tget_class(type.get()) == H5T_STRING, w, ": expected a string attribute");
    SEGRANK_CHECK(H5Tis_variable_str(type.get()) == 0, w,
                  ": a variable-length string (kept in HDF5's global heap, which has no checksum: "
                  "one flipped bit there hangs or crashes its reader), not read; segrank writes "
                  "fixed-length strings since checkpoint and graph store format_version 3");
    const size_t n = H5Tget_size(type.get());
    SEGRANK_CHECK(n > 0 && n <= (size_t{1} << 30), w, ": string of ", n,
                  " bytes (expected 1 byte to 1 GiB)");
    std::string s(n, '\0');
    h5_check(H5Aread(a.get(), type.get(), s.data()), w, "H5Aread");
    s.resize(std::strlen(s.c_str()));
    return s;
}

bool H5Object::attr_is_variable_string(const std::string& name) const {
    if (!has_attr(name)) return false;
    const std::string w = where_ + " attribute '" + name + "'";
    H5Handle a(h5_check(H5Aopen(id(), name.c_str(), H5P_DEFAULT), w, "H5Aopen"));
    H5Handle type(h5_check(H5Aget_type(a.get()), w, "H5Aget_type"));
    return H5Tget_class(type.get()) == H5T_STRING && H5Tis_variable_str(type.get()) > 0;
}

std::optional<int64_t> H5Object::attr_int(const std::string& name) const {
    if (!has_attr(name)) return std::nullopt;
    const std::string w = where_ + " attribute '" + name + "'";
    H5Handle a(h5_check(H5Aopen(id(), name.c_str(), H5P_DEFAULT), w, "H5Aopen"));
    H5Handle type(h5_check(H5Aget_type(a.get()), w, "H5Aget_type"));
    SEGRANK_CHECK(H5Tget_class(type.get()) == H5T_INTEGER, w, ": expected an integer attribute");
    int64_t v = 0;
    h5_check(H5Aread(a.get(), H5T_NATIVE_INT64, &v), w, "H5Aread");
    return v;
}

}  // namespace segrank
