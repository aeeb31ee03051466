// Exact overlap of strided layouts in 128-bit integers: the compiled twin of
// aliasflow/solver/{layout,api,search}.py (the Python code is the readable reference).
//
// No Python here: module.cpp validates and converts the arguments, so this file can be
// fuzzed and tested on its own.  Every function answers
//   NO (0), YES (1), UNDECIDED (-1) or EXHAUSTED (-2)
// UNDECIDED means "not decided here" (a value does not fit the checked 128-bit range): the
// caller then uses the Python big-integer path, exactly as the pure reference does.
// EXHAUSTED means the exact search ran past its work budget: the caller hands the problem
// to isl (the Python reference does the same after its own, smaller, search budget).
#pragma once

#include <algorithm>
#include <cstdint>
#include <vector>

namespace afn {

typedef __int128 i128;

enum { NO = 0, YES = 1, UNDECIDED = -1, EXHAUSTED = -2 };

// Inputs are 64-bit; module.cpp only passes values with |v| <= 2^62.
constexpr int64_t INPUT_LIMIT = (int64_t(1) << 62);
constexpr int MAX_NDIM = 64;
// Work units of the compiled search before it hands the problem back (Python then goes
// on to isl).  The Python reference uses 4000; a unit here costs ~10 ns, not ~1 µs.
constexpr long DEFAULT_BUDGET = 50000;

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
// Values the search works with stay below 2^110 so that sums of up to 128 of them, and
// the products in the congruence step (both factors below 2^63), cannot overflow.
constexpr i128 VALUE_LIMIT = i128(1) << 110;
inline i128 bounded(i128 v) {
    if (v > VALUE_LIMIT || v < -VALUE_LIMIT) throw Overflow();
    return v;
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

// A layout as given: offset, shape, stride (ndim entries each).
struct Layout {
    int64_t offset;
    int ndim;
    const int64_t* shape;
    const int64_t* stride;
};

// Normal form: lowest cell, highest cell, positive ascending strides with sizes >= 2
// (adjacent dims merged when that keeps the set of cells), as in layout.norm.
struct NormalForm {
    bool empty = false;
    i128 lo = 0, hi = 0;
    std::vector<i128> strides, sizes;
};

// Throws Overflow; the caller has rejected negative sizes.
inline void normalise(const Layout& L, NormalForm& nf) {
    struct Dim { i128 s, n; };
    Dim dims[MAX_NDIM];
    int k = 0;
    i128 off = L.offset;
    for (int j = 0; j < L.ndim; ++j) {
        i128 n = L.shape[j], s = L.stride[j];
        if (n == 0) { nf.empty = true; return; }
        if (n == 1 || s == 0) continue;
        if (s < 0) {
            off = bounded(add(off, mul(s, n - 1)));
            s = -s;
        }
        dims[k++] = Dim{s, n};
    }
    std::sort(dims, dims + k, [](const Dim& a, const Dim& b) {
        return a.s < b.s || (a.s == b.s && a.n < b.n);
    });
    nf.strides.clear();
    nf.sizes.clear();
    for (int t = 0; t < k; ++t) {
        i128 s = dims[t].s, n = dims[t].n;
        if (!nf.strides.empty()) {
            i128 base = nf.strides.back(), total = nf.sizes.back();
            if (s % base == 0 && s / base <= total) {
                nf.sizes.back() = bounded(add(total, mul(s / base, n - 1)));
                continue;
            }
        }
        nf.strides.push_back(s);
        nf.sizes.push_back(n);
    }
    i128 hi = off;
    for (size_t t = 0; t < nf.strides.size(); ++t)
        hi = bounded(add(hi, mul(nf.strides[t], nf.sizes[t] - 1)));
    nf.lo = off;
    nf.hi = hi;
}

// ---------------------------------------------------------------- the search (search.py)

struct Term { i128 c, u; };

struct Exhausted {};

// gcd of coefficients (all below 2^63)
inline int64_t gcd64(int64_t a, int64_t b) {
    while (b) {
        int64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}
// d mod g for d >= 0, g > 0 (g below 2^63): 64-bit division when d fits
inline i128 mod_pos(i128 d, int64_t g) {
    if (d <= i128(INT64_MAX)) return int64_t(d) % g;
    return d % g;
}

// Memo of failed search states (key, d): open addressing, grown on demand, allocated only
// when the search gets that far (most queries never do).
class FailedSet {
    struct Slot { i128 d; int32_t key; };  // key -1: empty
    std::vector<Slot> slots;
    size_t used = 0;
    static size_t hash(int32_t key, i128 d) {
        uint64_t lo = uint64_t(d), hi = uint64_t(d >> 64);
        uint64_t h = lo ^ (hi * 0x9E3779B97F4A7C15ull) ^ (uint64_t(key) << 40);
        h ^= h >> 33;  // murmur3 finaliser: every input bit reaches the low bits
        h *= 0xFF51AFD7ED558CCDull;
        h ^= h >> 33;
        h *= 0xC4CEB9FE1A85EC53ull;
        return size_t(h ^ (h >> 33));
    }
    void grow() {
        std::vector<Slot> old;
        old.swap(slots);
        slots.assign(old.empty() ? 64 : old.size() * 2, Slot{0, -1});
        used = 0;
        for (const Slot& x : old)
            if (x.key >= 0) insert(x.key, x.d);
    }

  public:
    bool contains(int32_t key, i128 d) const {
        if (slots.empty()) return false;
        size_t mask = slots.size() - 1;
        for (size_t i = hash(key, d) & mask;; i = (i + 1) & mask) {
            const Slot& x = slots[i];
            if (x.key < 0) return false;
            if (x.key == key && x.d == d) return true;
        }
    }
    void insert(int32_t key, i128 d) {
        if (2 * (used + 1) > slots.size()) grow();
        size_t mask = slots.size() - 1;
        for (size_t i = hash(key, d) & mask;; i = (i + 1) & mask) {
            Slot& x = slots[i];
            if (x.key < 0) {
                x = Slot{d, key};
                ++used;
                return;
            }
            if (x.key == key && x.d == d) return;
        }
    }
};

// z range for one term: 0 <= z <= u, c*z <= d, d - c*z <= rest_max
inline void z_range(i128 d, i128 c, i128 u, i128 rest_max, i128& lo, i128& hi) {
    i128 l = d - rest_max;
    lo = l <= 0 ? 0 : -fdiv(-l, c);
    hi = fdiv(d, c);
    if (hi > u) hi = u;
}

// _split_search: terms sorted by decreasing c and clamped (u <= d / c); every c < 2^63.
struct SplitSearch {
    const std::vector<Term>& terms;
    int k;
    std::vector<int64_t> cs;
    std::vector<i128> suffix;
    std::vector<int64_t> gtab;  // gcd(c[i..j-1]) at i * (k + 1) + j, computed lazily (0: not yet)
    FailedSet failed;
    long work = 0, budget;

    SplitSearch(const std::vector<Term>& t, long b) : terms(t), k(int(t.size())), budget(b) {
        cs.resize(k);
        suffix.assign(k + 1, 0);
        for (int i = k; i-- > 0;) {
            cs[i] = int64_t(t[i].c);
            suffix[i] = suffix[i + 1] + t[i].c * t[i].u;
        }
    }
    int64_t range_gcd(int i, int j) {  // i < j
        if (gtab.empty()) gtab.assign(size_t(k + 1) * (k + 1), 0);
        int64_t& g = gtab[size_t(i) * (k + 1) + j];
        if (!g) g = j - i == 1 ? cs[i] : gcd64(range_gcd(i, j - 1), cs[j - 1]);
        return g;
    }
    void tick() {
        if (++work > budget) throw Exhausted();
    }

    // c1*z1 + c2*z2 = d with 0 <= z <= u, decided in O(log) by the extended Euclidean
    // algorithm (as NumPy's mem_overlap.c does for its last two variables): the z1 that
    // solve it form one progression with step c2/g; intersect it with z1's bounds.
    bool two_terms(int i, i128 d) {
        int64_t c1 = cs[i], c2 = cs[i + 1];
        i128 u1 = terms[i].u, u2 = terms[i + 1].u;
        int64_t g = gcd64(c1, c2);
        if (mod_pos(d, g)) return false;
        i128 a1 = c1 / g, a2 = c2 / g, dg = d / g;
        i128 lo = dg - a2 * u2;  // z2 <= u2  <=>  a1*z1 >= dg - a2*u2
        lo = lo <= 0 ? 0 : -fdiv(-lo, a1);
        i128 hi = dg / a1;       // z2 >= 0
        if (hi > u1) hi = u1;
        if (lo > hi) return false;
        if (a2 == 1) return true;
        i128 r = fmod(fmod(dg, a2) * modinv(a1, a2), a2);  // z1 = r (mod a2)
        return lo + fmod(r - lo, a2) <= hi;
    }

    bool rec(int i, int j, i128 d) {
        if (d < 0 || d > suffix[i] - suffix[j]) return false;
        i128 c = terms[i].c, u = terms[i].u;
        if (j - i == 1) return mod_pos(d, cs[i]) == 0 && d / c <= u;
        if (j - i == 2) return two_terms(i, d);
        int32_t key = i * 1024 + j;
        if (failed.contains(key, d)) return false;
        tick();
        // best split point: fewest candidates for the lower part's target
        i128 best_n = -1, best_r = 0;
        int64_t best_g = 0;
        int best_p = -1;
        for (int p = i + 1; p < j; ++p) {
            int64_t g = range_gcd(i, p);
            i128 low_max = suffix[p] - suffix[j];
            i128 r = mod_pos(d, g);
            if (r > low_max) { failed.insert(key, d); return false; }
            i128 ncand = (low_max - r) / g + 1;
            if (best_p < 0 || ncand < best_n) {
                best_n = ncand; best_p = p; best_g = g; best_r = r;
            }
        }
        int64_t g_rest = range_gcd(i + 1, j);
        int64_t h = gcd64(cs[i], g_rest);
        if (mod_pos(d, h)) { failed.insert(key, d); return false; }
        i128 rest_max = suffix[i + 1] - suffix[j];
        i128 lo, hi;
        z_range(d, c, u, rest_max, lo, hi);
        if (lo > hi) { failed.insert(key, d); return false; }
        i128 mod = g_rest / h, start;
        if (mod > 1) {
            // (d/h mod m) * inv: both factors below m < 2^63
            i128 r = fmod(fmod(d / h, mod) * modinv(cs[i] / h, mod), mod);
            start = lo + fmod(r - lo, mod);
        } else {
            start = lo;
            mod = 1;
        }
        i128 nbranch = start <= hi ? (hi - start) / mod + 1 : 0;
        if (nbranch == 0) { failed.insert(key, d); return false; }
        if (best_p > i + 1 && best_n < nbranch) {
            for (i128 low = best_r, end = best_r + best_n * best_g; low < end; low += best_g) {
                tick();
                if (!rec(best_p, j, low)) continue;
                if (rec(i, best_p, d - low)) return true;
            }
            failed.insert(key, d);
            return false;
        }
        // largest z first: the rest then has the smallest target, far from the corner of
        // its box where solutions are rare (on NumPy's random problems this finds one in
        // far fewer steps than going up; the failed states are memoised either way)
        for (i128 z = start + (hi - start) / mod * mod; z >= start; z -= mod) {
            tick();
            if (rec(i + 1, j, d - c * z)) return true;
        }
        failed.insert(key, d);
        return false;
    }
};

// _dfs with an excluded solution (used for internal overlap).
struct ExcludeSearch {
    struct Level { i128 c, u, rest_max, mod, inv, h; };
    std::vector<Level> levels;
    const std::vector<i128>& exclude;
    FailedSet failed;
    long work = 0, budget;

    ExcludeSearch(const std::vector<Term>& t, const std::vector<i128>& ex, long b)
        : exclude(ex), budget(b) {
        size_t k = t.size();
        levels.resize(k);
        i128 rest_max = 0, g = 0;
        for (size_t i = k; i-- > 0;) {
            i128 c = t[i].c, u = t[i].u;
            i128 h = gcd(c, g);
            i128 mod = g ? g / h : 0;
            i128 inv = mod > 1 ? modinv(c / h, mod) : 0;
            levels[i] = Level{c, u, rest_max, mod, inv, h};
            rest_max += c * u;
            g = gcd(g, c);
        }
    }

    bool rec(int i, i128 d, bool dev) {
        const Level& L = levels[i];
        int k = int(levels.size());
        if (i == k - 1) {
            if (d % L.c) return false;
            i128 z = d / L.c;
            if (z > L.u || (!dev && z == exclude[i])) return false;
            return true;
        }
        int32_t key = i * 2 + (dev ? 1 : 0);
        if (failed.contains(key, d)) return false;
        i128 lo, hi;
        z_range(d, L.c, L.u, L.rest_max, lo, hi);
        if (lo > hi) { failed.insert(key, d); return false; }
        i128 start, step;
        if (L.mod > 1) {
            if (d % L.h) { failed.insert(key, d); return false; }
            i128 r = fmod(fmod(d / L.h, L.mod) * L.inv, L.mod);
            start = lo + fmod(r - lo, L.mod);
            step = L.mod;
        } else {
            start = lo;
            step = 1;
        }
        for (i128 z = start; z <= hi; z += step) {
            if (++work > budget) throw Exhausted();
            if (rec(i + 1, d - L.c * z, dev || z != exclude[i])) return true;
        }
        failed.insert(key, d);
        return false;
    }
};

// search.solve(terms, d) without exclusion, as a yes/no answer.
inline int solve(std::vector<Term> terms, i128 d, long budget) {
    if (terms.empty()) return d == 0 ? YES : NO;
    if (d < 0) return NO;
    std::sort(terms.begin(), terms.end(), [](const Term& a, const Term& b) { return a.c > b.c; });
    i128 total = 0, g = 0;
    for (Term& t : terms) {
        i128 cap = d / t.c;
        if (t.u > cap) t.u = cap;
        total = bounded(add(total, mul(t.c, t.u)));
        g = gcd(g, t.c);
    }
    if (d > total || d % g) return NO;
    try {
        SplitSearch s(terms, budget);
        return s.rec(0, int(terms.size()), d) ? YES : NO;
    } catch (Exhausted&) {
        return EXHAUSTED;
    }
}

// api._pair(..., want=False): do two normal forms share a cell?
inline int pair(const NormalForm& a, const NormalForm& b, long budget) {
    if (a.empty || b.empty) return NO;
    if (a.hi < b.lo || b.hi < a.lo) return NO;
    if (a.lo == b.lo || a.hi == b.hi) return YES;
    // a.x + b.(n-1-y) = b.hi - a.lo with positive coefficients; equal strides merged
    i128 d = sub(b.hi, a.lo);
    std::vector<Term> terms;
    terms.reserve(a.strides.size() + b.strides.size());
    for (size_t k = 0; k < a.strides.size(); ++k) terms.push_back(Term{a.strides[k], a.sizes[k] - 1});
    for (size_t k = 0; k < b.strides.size(); ++k) {
        bool merged = false;
        for (size_t t = 0; t < a.strides.size(); ++t) {
            if (terms[t].c == b.strides[k]) {
                terms[t].u += b.sizes[k] - 1;
                merged = true;
                break;
            }
        }
        if (!merged) terms.push_back(Term{b.strides[k], b.sizes[k] - 1});
    }
    return solve(terms, d, budget);
}

inline int intersects(const Layout& a, const Layout& b, long budget = DEFAULT_BUDGET) {
    try {
        NormalForm na, nb;
        normalise(a, na);
        normalise(b, nb);
        return pair(na, nb, budget);
    } catch (Overflow&) {
        return UNDECIDED;
    }
}

// api._internal: do two different indices of the layout map to the same cell?
inline int internal_overlap(const Layout& L, long budget = DEFAULT_BUDGET) {
    try {
        struct Dim { i128 s, n; };
        Dim dims[MAX_NDIM];
        int k = 0;
        for (int j = 0; j < L.ndim; ++j)
            if (L.shape[j] == 0) return NO;
        for (int j = 0; j < L.ndim; ++j) {
            i128 n = L.shape[j], s = L.stride[j];
            if (n == 1) continue;
            if (s == 0) return YES;
            dims[k++] = Dim{s < 0 ? -s : s, n};
        }
        std::sort(dims, dims + k, [](const Dim& a, const Dim& b) {
            return a.s < b.s || (a.s == b.s && a.n < b.n);
        });
        i128 span = 0;
        bool injective = true;
        for (int t = 0; t < k; ++t) {
            if (dims[t].s <= span) { injective = false; break; }
            span = bounded(add(span, mul(dims[t].s, dims[t].n - 1)));
        }
        if (injective) return NO;
        // sum s*w = 0 with -(n-1) <= w <= n-1, w != 0: shift by (n-1)
        std::vector<Term> terms;
        std::vector<i128> ex;
        i128 d = 0;
        for (int t = 0; t < k; ++t) {
            i128 u = dims[t].n - 1;
            terms.push_back(Term{dims[t].s, bounded(mul(2, u))});
            ex.push_back(u);
            d = bounded(add(d, mul(dims[t].s, u)));
        }
        // search.solve with exclude: sort by decreasing c, clamp (drop the exclusion when
        // the excluded point no longer fits)
        std::vector<int> order(k);
        for (int t = 0; t < k; ++t) order[t] = t;
        std::stable_sort(order.begin(), order.end(),
                         [&](int x, int y) { return terms[x].c > terms[y].c; });
        std::vector<Term> st;
        std::vector<i128> sx;
        bool keep_ex = true;
        for (int i : order) {
            Term t = terms[i];
            i128 cap = d / t.c;
            if (t.u > cap) {
                if (ex[i] > cap) keep_ex = false;
                t.u = cap;
            }
            st.push_back(t);
            sx.push_back(ex[i]);
        }
        i128 total = 0, g = 0;
        for (const Term& t : st) {
            total = bounded(add(total, mul(t.c, t.u)));
            g = gcd(g, t.c);
        }
        if (d > total || d % g) return NO;
        try {
            if (!keep_ex) {
                SplitSearch s(st, budget);
                return s.rec(0, int(st.size()), d) ? YES : NO;
            }
            ExcludeSearch s(st, sx, budget);
            return s.rec(0, d, false) ? YES : NO;
        } catch (Exhausted&) {
            return EXHAUSTED;
        }
    } catch (Overflow&) {
        return UNDECIDED;
    }
}

}  // namespace afn
