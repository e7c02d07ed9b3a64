// xxh3_64 and ContentHasher over libxxhash (the only includer of <xxhash.h>).
#include "gnn/core/hash.h"

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t as a complete type (held by value)
#include <xxhash.h>

#include <cstdio>
#include <new>

namespace segrank {

uint64_t xxh3_64(const void* p, size_t n) { return XXH3_64bits(p, n); }

std::string hash_hex(uint64_t h) {
    char buf[17];
    std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
    return buf;
}

struct ContentHasher::State {
    XXH3_state_t st;
};

ContentHasher::ContentHasher() : s_(std::make_unique<State>()) { XXH3_64bits_reset(&s_->st); }
ContentHasher::~ContentHasher() = default;

void ContentHasher::update(const void* p, size_t n) {
    if (n > 0) XXH3_64bits_update(&s_->st, p, n);
}

uint64_t ContentHasher::digest() const { return XXH3_64bits_digest(&s_->st); }

}  // namespace segrank
