// Attributes of HDF5 groups and datasets (data/h5_file.h): scalar int64 and UTF-8 string.
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
    H5Handle type(h5_check(H5Tcopy(H5T_C_S1), where_, "H5Tcopy"));
    h5_check(H5Tset_size(type.get(), H5T_VARIABLE), where_, "H5Tset_size");
    h5_check(H5Tset_cset(type.get(), H5T_CSET_UTF8), where_, "H5Tset_cset");
    H5Handle space(h5_check(H5Screate(H5S_SCALAR), where_, "H5Screate"));
    H5Handle a(
        h5_check(H5Acreate2(id(), name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
                 where_ + " attribute '" + name + "'", "H5Acreate2"));
    const char* p = value.c_str();
    h5_check(H5Awrite(a.get(), type.get(), &p), where_ + " attribute '" + name + "'", "H5Awrite");
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
    if (H5Tis_variable_str(type.get()) > 0) {
        H5Handle mt(h5_check(H5Tcopy(H5T_C_S1), w, "H5Tcopy"));
        h5_check(H5Tset_size(mt.get(), H5T_VARIABLE), w, "H5Tset_size");
        h5_check(H5Tset_cset(mt.get(), H5Tget_cset(type.get())), w, "H5Tset_cset");
        char* p = nullptr;
        h5_check(H5Aread(a.get(), mt.get(), &p), w, "H5Aread");
        std::string s = p ? p : "";
        H5free_memory(p);
        return s;
    }
    const size_t n = H5Tget_size(type.get());
    std::string s(n, '\0');
    h5_check(H5Aread(a.get(), type.get(), s.data()), w, "H5Aread");
    s.resize(std::strlen(s.c_str()));
    return s;
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
