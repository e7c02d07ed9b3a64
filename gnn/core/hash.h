// FNV-1a, the non-cryptographic 64-bit hash of byte strings used for keys and fingerprints
// (equality is always checked separately where a collision would matter).
#pragma once
#include <cstddef>
#include <cstdint>

namespace segrank {

/// 64-bit FNV-1a of n bytes at p, continuing from h (the offset basis by default).
inline uint64_t fnv1a(const void* p, size_t n, uint64_t h = 0xcbf29ce484222325ULL) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

}  // namespace segrank
