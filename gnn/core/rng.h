// Rng: explicit-seed xoshiro256** generator with derived streams (docs/style.md#randomness). No
// global RNG. Every stream is derived from (seed, epoch or step, graph id, stream name), never rank
// or thread, so runs are identical at any number of ranks and threads
// (docs/sampling.md#random-streams).
#pragma once
#include <cmath>
#include <cstdint>
#include <string_view>

namespace segrank {

/// splitmix64 finalizer: a bijective 64-bit mixer.
constexpr uint64_t mix64(uint64_t x) {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/// FNV-1a hash of a stream name (compile-time usable): `stream_id("configs")`.
constexpr uint64_t stream_id(std::string_view name) {
    uint64_t h = 0xcbf29ce484222325ULL;
    for (char c : name) {
        h ^= static_cast<uint8_t>(c);
        h *= 0x100000001b3ULL;
    }
    return h;
}

/// Deterministic pseudo-random generator (xoshiro256**), seeded explicitly.
class Rng {
public:
    explicit Rng(uint64_t seed) {
        uint64_t x = seed;
        for (auto& s : s_) {
            x = mix64(x);
            s = x;
        }
    }

    /// A generator for the stream keyed by (seed, a, b, stream): e.g. derive(seed, epoch, graph,
    /// "configs").
    static Rng derive(uint64_t seed, uint64_t a, uint64_t b, std::string_view stream) {
        uint64_t h = mix64(seed ^ 0x5bd1e995ULL);
        h = mix64(h ^ a);
        h = mix64(h ^ (b * 0x9e3779b97f4a7c15ULL));
        h = mix64(h ^ stream_id(stream));
        return Rng(h);
    }

    uint64_t next_u64() {
        const uint64_t result = rotl(s_[1] * 5, 7) * 9;
        const uint64_t t = s_[1] << 17;
        s_[2] ^= s_[0];
        s_[3] ^= s_[1];
        s_[1] ^= s_[2];
        s_[0] ^= s_[3];
        s_[2] ^= t;
        s_[3] = rotl(s_[3], 45);
        return result;
    }
    /// Uniform double in [0, 1) with 53 random bits.
    double uniform() { return static_cast<double>(next_u64() >> 11) * 0x1.0p-53; }
    /// Uniform integer in [0, n) (Lemire's nearly-divisionless method; unbiased). n > 0.
    uint64_t uniform_int(uint64_t n) {
        __uint128_t m = static_cast<__uint128_t>(next_u64()) * n;
        uint64_t l = static_cast<uint64_t>(m);
        if (l < n) {
            uint64_t t = -n % n;
            while (l < t) {
                m = static_cast<__uint128_t>(next_u64()) * n;
                l = static_cast<uint64_t>(m);
            }
        }
        return static_cast<uint64_t>(m >> 64);
    }
    /// Standard normal (Box-Muller; one value per call).
    double normal() {
        double u1 = uniform();
        double u2 = uniform();
        if (u1 < 1e-300) u1 = 1e-300;
        return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
    }
    /// Standard Gumbel sample -log(-log(u)).
    double gumbel() {
        double u = uniform();
        if (u < 1e-300) u = 1e-300;
        return -std::log(-std::log(u));
    }

private:
    static uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }
    uint64_t s_[4];
};

}  // namespace segrank
