// Checked 128-bit arithmetic and the number theory of the compiled overlap search
// (aliasflow/solver/_native_src/overlap.hpp): gcds, modular inverses, floor divisions,
// floor sums and the three-term solution count (search._count3 is the readable reference).
// Checked operations throw Overflow; the callers catch it (a value that does not fit is
// handed back to the Python big-integer path, or a count falls back to branching).
#pragma once

#include <cstdint>
#include <utility>

namespace afn {

typedef __int128 i128;

struct Overflow {};  // thrown by the checked arithmetic, caught at the entry points

inline i128 add(i128 a, i128 b) {
    i128 r;
    if (__builtin_add_overflow(a, b, &r)) throw Overflow();
    return r;
}
inline i128 sub(i128 a, i128 b) {
    i128 r;
    if (__builtin_sub_overflow(a, b, &r)) throw Overflow();
    return r;
}
inline i128 mul(i128 a, i128 b) {
    i128 r;
    if (__builtin_mul_overflow(a, b, &r)) throw Overflow();
    return r;
}

inline i128 gcd(i128 a, i128 b) {
    if (a < 0) a = -a;
    if (b < 0) b = -b;
    while (b) {
        i128 t = a % b;
        a = b;
        b = t;
    }
    return a;
}
// floor division and non-negative modulo for b > 0 (C++ truncates towards zero)
inline i128 fdiv(i128 a, i128 b) {
    i128 q = a / b;
    if ((a % b != 0) && (a < 0)) --q;
    return q;
}
inline i128 fmod(i128 a, i128 b) {
    i128 r = a % b;
    return r < 0 ? r + b : r;
}
// inverse of a modulo m (gcd(a, m) == 1, m > 1), by the extended Euclidean algorithm
inline i128 modinv(i128 a, i128 m) {
    i128 g = m, x = 0, x1 = 1, a1 = fmod(a, m);
    while (a1) {
        i128 q = g / a1;
        i128 t = g - q * a1; g = a1; a1 = t;
        t = x - q * x1; x = x1; x1 = t;
    }
    return fmod(x, m);
}

// gcd of non-negative values below 2^63 (binary: no divisions)
inline int64_t gcd64(int64_t a, int64_t b) {
    uint64_t x = uint64_t(a), y = uint64_t(b);
    if (x == 0) return int64_t(y);
    if (y == 0 || x == 1 || y == 1) return int64_t(y == 0 ? x : 1);
    int shift = __builtin_ctzll(x | y);
    x >>= __builtin_ctzll(x);
    do {
        y >>= __builtin_ctzll(y);
        if (x > y) std::swap(x, y);
        y -= x;
    } while (y);
    return int64_t(x << shift);
}
inline bool fits64(i128 v) { return v == i128(int64_t(v)); }
// d mod g for d >= 0, g > 0 (g below 2^63): 64-bit division when d fits
inline i128 mod_pos(i128 d, int64_t g) {
    if (d <= i128(INT64_MAX)) return int64_t(d) % g;
    return d % g;
}
// inverse of a modulo m (gcd(a, m) == 1, m > 1, 0 <= a): 64-bit extended Euclid (the
// coefficients stay within m in magnitude)
inline int64_t modinv64(int64_t a, int64_t m) {
    int64_t g = m, x = 0, x1 = 1, a1 = a % m;
    while (a1) {
        int64_t q = g / a1, t = g - q * a1;
        g = a1;
        a1 = t;
        t = x - q * x1;
        x = x1;
        x1 = t;
    }
    return x < 0 ? x + m : x;
}
// x * y mod m for 0 <= x, y < m < 2^63: 64-bit when the product fits
inline int64_t mulmod64(int64_t x, int64_t y, int64_t m) {
    if (m <= (int64_t(1) << 32)) return int64_t(uint64_t(x) * uint64_t(y) % uint64_t(m));
    return int64_t((unsigned __int128)x * uint64_t(y) % uint64_t(m));
}
// v mod m in [0, m) for any v, m > 0: 64-bit when v fits
inline int64_t mod64(i128 v, int64_t m) {
    int64_t r = fits64(v) ? int64_t(v) % m : int64_t(v % m);
    return r < 0 ? r + m : r;
}
// a / b for a >= 0, b > 0: 64-bit division when a fits
inline i128 div_pos(i128 a, int64_t b) {
    if (a <= i128(INT64_MAX)) return int64_t(a) / b;
    return a / b;
}
// floor(a / b) for b > 0, any a
inline i128 fdiv64(i128 a, int64_t b) {
    if (fits64(a)) {
        int64_t x = int64_t(a), q = x / b;
        if (x % b && x < 0) --q;
        return q;
    }
    return fdiv(a, b);
}

// q = x div y, r = x mod y for x >= 0, y > 0: 64-bit division when both fit
inline void divmod_pos(i128 x, i128 y, i128& q, i128& r) {
    if (x <= i128(INT64_MAX) && y <= i128(INT64_MAX)) {
        int64_t xs = int64_t(x), ys = int64_t(y);
        q = xs / ys;
        r = xs % ys;
    } else {
        q = x / y;
        r = x % y;
    }
}
// floor(x / y) for y > 0, any x
inline i128 fdiv_any(i128 x, i128 y) {
    i128 q, r;
    if (x >= 0) {
        divmod_pos(x, y, q, r);
        return q;
    }
    divmod_pos(-(x + 1), y, q, r);  // floor(x/y) = -((-x-1) div y) - 1 for x < 0 (no overflow)
    return -q - 1;
}

// sum of floor((a*i + b) / m) over 0 <= i < n (m > 0; any a, b), by the Euclid-like
// reduction of the AtCoder library's floor_sum; checked (throws Overflow).
inline i128 floor_sum(i128 n, i128 m, i128 a, i128 b) {
    if (n <= 0) return 0;
    auto tri = [](i128 k) { return k % 2 ? mul(k, (k - 1) / 2) : mul(k / 2, k - 1); };
    i128 ans = 0, q, r;
    if (a < 0 || a >= m) {
        q = fdiv_any(a, m);
        ans = add(ans, mul(tri(n), q));
        a = sub(a, mul(q, m));
    }
    if (b < 0 || b >= m) {
        q = fdiv_any(b, m);
        ans = add(ans, mul(n, q));
        b = sub(b, mul(q, m));
    }
    // 0 <= a, b < m from here.  While n < 2^31 and m*(n+1) < 2^62 (both only shrink), the
    // reduction runs in 64 bits and each added term (below 2^61 * 2^63) fits unchecked
    if (n < (i128(1) << 31) && m < (i128(1) << 62) / (n + 1)) {
        int64_t N = int64_t(n), M = int64_t(m), A = int64_t(a), B = int64_t(b);
        for (;;) {
            int64_t y = A * N + B;  // < M * (N + 1)
            if (y < M) return ans;
            N = y / M;
            B = y % M;
            int64_t t = M;
            M = A;
            A = t;
            ans = add(ans, i128(N % 2 ? N * ((N - 1) / 2) : (N / 2) * (N - 1)) * (A / M));
            A %= M;
            ans = add(ans, i128(N) * (B / M));
            B %= M;
        }
    }
    for (;;) {
        i128 y = add(mul(a, n), b);
        if (y < m) return ans;
        divmod_pos(y, m, n, b);
        i128 t = m;  // (n, m, a, b) <- (y div m, a, m, y mod m), then reduce a and b mod a
        m = a;
        a = t;
        divmod_pos(a, m, q, r);
        ans = add(ans, mul(tri(n), q));
        a = r;
        divmod_pos(b, m, q, r);
        ans = add(ans, mul(n, q));
        b = r;
    }
}

// Number of solutions of c1*z1 + c2*z2 + c3*z3 = d with 0 <= z1 <= u1, 0 <= z2 <= u2 and
// z3 = s + M*j, 0 <= j < J, where every such z3 leaves the pair a target divisible by
// g12 = gcd(c1, c2) in [0, c1*u1 + c2*u2] (the branch's congruence and range give that).
// With a1 = c1/g12, a2 = c2/g12, T = (d - c3*z3)/g12 and v = a1^-1 mod a2, the pair has
//   floor((H - v*T) / a2) - floor((L - 1 - v*T) / a2)
// solutions, H = min(u1, T div a1), L = max(0, ceil((T - a2*u2) / a1)); T falls linearly
// with j, so on the (at most two) pieces of j where H (L) is one expression each term is a
// floor of a linear function of j, and the sum over j is a floor_sum.  O(log) instead of
// J two-term checks, which matter when the pair's solutions drift slowly with j.
struct Count3Static {
    i128 g12, a1, a2, v, w, a12, E;
};
// The parts of count3 that depend on the coefficients and the step only.
inline Count3Static count3_static(int64_t c1, int64_t c2, int64_t c3, i128 M) {
    Count3Static k;
    k.g12 = gcd64(c1, c2);
    k.a1 = c1 / k.g12;
    k.a2 = c2 / k.g12;
    k.E = mul(c3, M) / k.g12;
    if (k.E <= 0) throw Overflow();  // not a branch of the search (M >= g12 / gcd(c1, c2, c3))
    k.v = k.a2 > 1 ? modinv64(int64_t(k.a1), int64_t(k.a2)) : 0;
    k.w = sub(1, mul(k.a1, k.v));  // a multiple of a2
    k.a12 = mul(k.a1, k.a2);
    return k;
}
inline i128 count3(const Count3Static& k, i128 u1, i128 u2, int64_t c3, i128 s, i128 J, i128 d) {
    const i128 a1 = k.a1, a2 = k.a2, v = k.v, w = k.w, a12 = k.a12, E = k.E;
    i128 T0 = sub(d, mul(c3, s)) / k.g12;
    auto Tat = [&](i128 j) { return sub(T0, mul(E, j)); };
    // sum over j in [j0, j1) of floor((u1 - v T)/a2), floor(w T/(a1 a2)),
    // floor((w T - a2 u2 - 1)/(a1 a2)) and floor((-1 - v T)/a2)
    auto h_u1 = [&](i128 j0, i128 j1) { return floor_sum(j1 - j0, a2, mul(v, E), sub(u1, mul(v, Tat(j0)))); };
    auto h_div = [&](i128 j0, i128 j1) { return floor_sum(j1 - j0, a12, sub(0, mul(w, E)), mul(w, Tat(j0))); };
    auto l_ceil = [&](i128 j0, i128 j1) {
        return floor_sum(j1 - j0, a12, sub(0, mul(w, E)), sub(sub(mul(w, Tat(j0)), mul(a2, u2)), 1));
    };
    auto l_zero = [&](i128 j0, i128 j1) { return floor_sum(j1 - j0, a2, mul(v, E), sub(-1, mul(v, Tat(j0)))); };
    auto clampj = [&](i128 j) { return j < 0 ? i128(0) : j > J ? J : j; };
    // H = u1 while T >= a1*u1, i.e. for j <= (T0 - a1*u1) div E
    i128 cut = clampj(add(fdiv_any(sub(T0, mul(a1, u1)), E), 1));
    i128 total = add(h_u1(0, cut), h_div(cut, J));
    // L = ceil((T - a2*u2)/a1) > 0 while T > a2*u2, i.e. for j < ceil((T0 - a2*u2) / E)
    i128 num = sub(T0, mul(a2, u2));
    cut = clampj(-fdiv_any(sub(0, num), E));
    return sub(total, add(l_ceil(0, cut), l_zero(cut, J)));
}
inline i128 count3(int64_t c1, i128 u1, int64_t c2, i128 u2, int64_t c3, i128 s, i128 M, i128 J,
                   i128 d) {
    return count3(count3_static(c1, c2, c3, M), u1, u2, c3, s, J, d);
}

}  // namespace afn
