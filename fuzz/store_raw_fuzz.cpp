// HDF5 graph store from raw bytes: the bytes as a file, read by fuzz/store_read.h. This also feeds
// corrupt HDF5 to libhdf5 itself, which (Debian 1.10.8, not instrumented) has bugs of its own on
// such files: leaks when H5Dopen2 fails in H5D__layout_oh_read (suppressed by fuzz/lsan.supp) and a
// heap-buffer-overflow in H5HG_read and a 4 GiB malloc in H5T__conv_vlen for a variable-length
// string attribute whose global heap is corrupt. The `store` target covers our reader on
// well-formed files.
#include <cstddef>
#include <cstdint>

#include "fuzz/fuzz_util.h"
#include "fuzz/store_read.h"

using namespace segrank;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    const auto path = fuzz::write_temp("h5", data, size);
    if (is_hdf5_file(path)) fuzz::read_every_graph(path);
    return 0;
}
