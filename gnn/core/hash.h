// Hashes of byte strings: FNV-1a, the small 64-bit hash used for keys and fingerprints (equality is
// always checked separately where a collision would matter), and XXH3-64 (xxHash, libxxhash), the
// fast content hash of data a run reads (rank agreement, --resume data checks) and of checkpoint
// datasets (their checksums).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

namespace segrank {

/// 64-bit FNV-1a of n bytes at p, continuing from h (the offset basis by default).
inline uint64_t fnv1a(const void* p, size_t n, uint64_t h = 0xcbf29ce484222325ULL) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 0x100000001b3ULL;
    return h;
}

/// XXH3-64 (seed 0) of n bytes at p: several GB/s, so hashing data costs little beside reading it.
uint64_t xxh3_64(const void* p, size_t n);

/// "0123456789abcdef": a 64-bit hash as 16 lower-case hex digits.
std::string hash_hex(uint64_t h);

/// Streaming XXH3-64: the digest of the concatenation of every update, however it is split.
class ContentHasher {
public:
    ContentHasher();
    ~ContentHasher();
    ContentHasher(const ContentHasher&) = delete;
    ContentHasher& operator=(const ContentHasher&) = delete;
    /// Adds n bytes at p.
    void update(const void* p, size_t n);
    /// Adds the bytes of a span of trivially copyable values (host byte order: little-endian).
    template <typename T>
    void update(std::span<const T> v) {
        update(v.data(), v.size_bytes());
    }
    template <typename T>
    void update(const std::vector<T>& v) {
        update(v.data(), v.size() * sizeof(T));
    }
    /// Adds one value's bytes (e.g. a length before an array, so that [a][bc] != [ab][c]).
    void update_int(int64_t x) { update(&x, sizeof(x)); }
    /// Digest of everything added so far (more updates may follow).
    uint64_t digest() const;

private:
    struct State;
    std::unique_ptr<State> s_;
};

}  // namespace segrank
