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

#include "arith.hpp"

namespace afn {

enum { NO = 0, YES = 1, UNDECIDED = -1, EXHAUSTED = -2 };

// Inputs are 64-bit; module.cpp only passes values with |v| <= 2^62.
constexpr int64_t INPUT_LIMIT = (int64_t(1) << 62);
constexpr int MAX_NDIM = 64;
// Work units of the compiled search before it hands the problem back (Python then goes
// on to isl).  The Python reference uses 4000; a unit here costs some 30-50 ns, not
// ~1 µs (NumPy's hard example exhausts it in about 2 ms).
constexpr long DEFAULT_BUDGET = 50000;
// Three terms with more branches than this are decided by counting their solutions (a count
// costs about as much as this many two-term checks, and is charged so to the work budget).
#ifndef THREE_TERMS_COUNT
#define THREE_TERMS_COUNT 8
#endif
// ... after this many of their branches failed (solutions are often dense: the first finds one).
#ifndef THREE_TERMS_TRIES
#define THREE_TERMS_TRIES 2
#endif

// Values the search works with stay below 2^110 so that sums of up to 128 of them, and
// the products in the congruence step (both factors below 2^63), cannot overflow.
constexpr i128 VALUE_LIMIT = i128(1) << 110;
inline i128 bounded(i128 v) {
    if (v > VALUE_LIMIT || v < -VALUE_LIMIT) throw Overflow();
    return v;
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

// The same normal form in fixed arrays (no allocation: intersects uses this one).
struct Normal {
    bool empty = false;
    int n = 0;
    i128 lo = 0, hi = 0;
    int64_t strides[MAX_NDIM];  // below 2^62 (inputs are)
    i128 sizes[MAX_NDIM];
};

// Throws Overflow; the caller has rejected negative sizes.
inline void normalise(const Layout& L, Normal& nf) {
    struct Dim { int64_t s; i128 n; };
    Dim dims[MAX_NDIM];
    int k = 0;
    i128 off = L.offset;
    nf.empty = false;
    nf.n = 0;
    for (int j = 0; j < L.ndim; ++j) {
        int64_t n = L.shape[j], s = L.stride[j];
        if (n == 0) { nf.empty = true; return; }
        if (n == 1 || s == 0) continue;
        if (s < 0) {
            off = bounded(add(off, mul(s, n - 1)));
            s = -s;
        }
        // insertion sort by (stride, size): a handful of dims
        int t = k++;
        while (t > 0 && (dims[t - 1].s > s || (dims[t - 1].s == s && dims[t - 1].n > n))) {
            dims[t] = dims[t - 1];
            --t;
        }
        dims[t] = Dim{s, n};
    }
    int m = 0;
    for (int t = 0; t < k; ++t) {
        int64_t s = dims[t].s;
        i128 n = dims[t].n;
        if (m) {
            int64_t base = nf.strides[m - 1];
            i128 total = nf.sizes[m - 1];
            if (s % base == 0 && s / base <= total) {
                nf.sizes[m - 1] = bounded(add(total, mul(s / base, n - 1)));
                continue;
            }
        }
        nf.strides[m] = s;
        nf.sizes[m] = n;
        ++m;
    }
    i128 hi = off;
    for (int t = 0; t < m; ++t) hi = bounded(add(hi, mul(nf.strides[t], nf.sizes[t] - 1)));
    nf.n = m;
    nf.lo = off;
    nf.hi = hi;
}

inline void normalise(const Layout& L, NormalForm& nf) {
    Normal f;
    normalise(L, f);
    nf.empty = f.empty;
    nf.lo = f.lo;
    nf.hi = f.hi;
    nf.strides.assign(f.strides, f.strides + f.n);
    nf.sizes.assign(f.sizes, f.sizes + f.n);
}

// ---------------------------------------------------------------- the search (search.py)

constexpr int MAX_TERMS = 2 * MAX_NDIM;
typedef unsigned __int128 u128;

struct Term { i128 c, u; };

struct Exhausted {};

// Memo of failed search states (mask of terms, target): open addressing, grown on demand,
// allocated only when the search gets that far (most queries never do).  Key 0 is empty.
class FailedSet {
    struct Slot { i128 d; u128 key; };
    std::vector<Slot> slots;
    size_t used = 0;
    static size_t hash(u128 key, i128 d) {
        uint64_t h = uint64_t(d) ^ (uint64_t(d >> 64) * 0x9E3779B97F4A7C15ull) ^
                     (uint64_t(key) * 0xC2B2AE3D27D4EB4Full) ^
                     (uint64_t(key >> 64) * 0x165667B19E3779F9ull);
        h ^= h >> 33;  // murmur3 finaliser: every input bit reaches the low bits
        h *= 0xFF51AFD7ED558CCDull;
        h ^= h >> 33;
        h *= 0xC4CEB9FE1A85EC53ull;
        return size_t(h ^ (h >> 33));
    }
    void grow() {
        std::vector<Slot> old;
        old.swap(slots);
        slots.assign(old.empty() ? 64 : old.size() * 2, Slot{0, 0});
        used = 0;
        for (const Slot& x : old)
            if (x.key) insert(x.key, x.d);
    }

  public:
    bool contains(u128 key, i128 d) const {
        if (slots.empty()) return false;
        size_t mask = slots.size() - 1;
        for (size_t i = hash(key, d) & mask;; i = (i + 1) & mask) {
            const Slot& x = slots[i];
            if (!x.key) return false;
            if (x.key == key && x.d == d) return true;
        }
    }
    void insert(u128 key, i128 d) {
        if (2 * (used + 1) > slots.size()) grow();
        size_t mask = slots.size() - 1;
        for (size_t i = hash(key, d) & mask;; i = (i + 1) & mask) {
            Slot& x = slots[i];
            if (!x.key) {
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
inline void z_range64(i128 d, int64_t c, i128 u, i128 rest_max, i128& lo, i128& hi) {
    i128 l = d - rest_max;
    lo = l <= 0 ? 0 : div_pos(l + (c - 1), c);
    hi = div_pos(d, c);  // d >= 0 here
    if (hi > u) hi = u;
}

// search._split_search: the terms (sorted by decreasing c, clamped to u <= d / c, u >= 1,
// every c < 2^63) are a set; a sub-problem is a subset (bit i: term i) and a target.
// For a subset it first checks the target's range and its congruence mod the subset's gcd,
// then either
//  * splits it: the first p terms (largest c) have gcd G, so the others contribute
//    d mod G plus a multiple of G, at most their maximum; when that leaves fewer candidate
//    targets than the best branch, it tries each (the divisibility-chain case of views
//    sliced from one parent: usually one candidate, and the parts are independent), or
//  * branches on a term (z is fixed mod the others' gcd over gcd and bounded by the others'
//    range): the one whose candidates times the others' range is least, which leaves the
//    densest rest (fewest branches, and the likeliest to hold a solution), trying them from
//    the value that leaves the others a target in the middle of their range outwards
//    (solutions are densest there; from one end the rest starts in a corner of its box
//    where they are rare).
// Two terms are solved exactly, three with many branches by counting their solutions
// (count3), failed states of four terms or more are memoised, and the work is bounded.
struct SplitSearch {
    int k;
    int64_t c[MAX_TERMS];
    i128 u[MAX_TERMS];
    // scratch for one node's analysis (not needed once it recurses)
    int idx[MAX_TERMS];
    int64_t pre[MAX_TERMS + 1], suf[MAX_TERMS + 1];
    FailedSet failed;
    long work = 0, budget;
    // Deep searches end in many three-term states over few subsets and in two-term checks
    // over few pairs: their gcds, inverses and count constants are kept (direct-mapped).
    struct Three {
        u128 mask = 0;  // 0: empty
        int64_t pre[3], all, mod[3], inv[3];
        bool counted[3];
        Count3Static k[3];
    };
    Three three[16];
    struct Pair {
        int key = -1;
        int64_t g, a1, a2, inv;
    };
    Pair pairs[32];

    SplitSearch(const Term* t, int n, long b) : k(n), budget(b) {
        for (int i = 0; i < n; ++i) {
            c[i] = int64_t(t[i].c);
            u[i] = t[i].u;
        }
    }
    void tick() {
        if (++work > budget) throw Exhausted();
    }

    // c1*z1 + c2*z2 = d with 0 <= z <= u, decided in O(log) by the extended Euclidean
    // algorithm (as NumPy's mem_overlap.c does for its last two variables): the z1 that
    // solve it form one progression with step c2/g; intersect it with z1's bounds.
    bool two_terms(int i, int j, i128 d) {
        i128 u1 = u[i], u2 = u[j];
        int key = i * MAX_TERMS + j;
        Pair& P = pairs[(uint32_t(key) * 2654435761u) >> 27];
        if (P.key != key) {
            P.key = key;
            P.g = gcd64(c[i], c[j]);
            P.a1 = c[i] / P.g;
            P.a2 = c[j] / P.g;
            P.inv = P.a2 > 1 ? modinv64(P.a1, P.a2) : 0;
        }
        int64_t g = P.g, a1 = P.a1, a2 = P.a2;
        if (mod_pos(d, g)) return false;
        i128 dg = div_pos(d, g);
        i128 lo = dg - a2 * u2;  // z2 <= u2  <=>  a1*z1 >= dg - a2*u2
        lo = lo <= 0 ? 0 : div_pos(lo + (a1 - 1), a1);
        i128 hi = div_pos(dg, a1);  // z2 >= 0
        if (hi > u1) hi = u1;
        if (lo > hi) return false;
        if (a2 == 1) return true;
        int64_t r = mulmod64(mod64(dg, a2), P.inv, a2);  // z1 = r (mod a2)
        return lo + mod64(r - lo, a2) <= hi;
    }

    // the cached constants of a three-term subset (idx holds its members)
    Three& three_for(u128 mask) {
        uint64_t h = (uint64_t(mask) ^ uint64_t(mask >> 64)) * 0x9E3779B97F4A7C15ull;
        Three& T = three[h >> 60];
        if (T.mask == mask) return T;
        T.mask = mask;
        int64_t c0 = c[idx[0]], c1 = c[idx[1]], c2 = c[idx[2]];
        T.pre[0] = 0;
        T.pre[1] = c0;
        T.pre[2] = gcd64(c0, c1);
        T.all = gcd64(T.pre[2], c2);
        T.mod[0] = gcd64(c1, c2) / T.all;
        T.mod[1] = gcd64(c0, c2) / T.all;
        T.mod[2] = T.pre[2] / T.all;
        int64_t cs[3] = {c0, c1, c2};
        for (int t = 0; t < 3; ++t) {
            T.inv[t] = T.mod[t] > 1 ? modinv64((cs[t] / T.all) % T.mod[t], T.mod[t]) : 0;
            T.counted[t] = false;
        }
        return T;
    }

    // the first p members (idx) against the rest, whose target is r + G*t for t < n
    bool split(u128 mask, int m, i128 d, int p, i128 n, int64_t G, i128 r) {
        u128 upper = 0;
        for (int t = 0; t < p; ++t) upper |= u128(1) << idx[t];
        u128 lower = mask & ~upper;
        for (i128 lt = r, end = r + n * G; lt < end; lt += G) {
            tick();
            if (!rec(lower, lt)) continue;
            if (rec(upper, d - lt)) return true;
        }
        return fail(mask, d, m);
    }

    // a failed state is memoised from four terms up (three are counted again quickly, and
    // their targets rarely repeat: the memo would only grow)
    bool fail(u128 mask, i128 d, int m) {
        if (m > 3) failed.insert(mask, d);
        return false;
    }

    bool rec(u128 mask, i128 d) {
        if (d < 0) return false;
        int m = 0;
        i128 tot = 0;
        for (uint64_t w = uint64_t(mask); w; w &= w - 1) idx[m++] = __builtin_ctzll(w);
        for (uint64_t w = uint64_t(mask >> 64); w; w &= w - 1) idx[m++] = 64 + __builtin_ctzll(w);
        for (int t = 0; t < m; ++t) tot += c[idx[t]] * u[idx[t]];  // each <= d of the root
        if (d > tot) return false;
        if (m == 1) return mod_pos(d, c[idx[0]]) == 0 && div_pos(d, c[idx[0]]) <= u[idx[0]];
        if (m == 2) return two_terms(idx[0], idx[1], d);
        if (m > 3 && failed.contains(mask, d)) return false;
        tick();
        Three* T = m == 3 ? &three_for(mask) : nullptr;
        // split points p: the first p terms against the rest
        i128 split_n = -1, split_r = 0, low = tot;
        int64_t split_g = 0, g = 0;
        int split_p = -1;
        pre[0] = 0;
        for (int p = 1; p < m; ++p) {
            int t = idx[p - 1];
            g = pre[p] = T ? T->pre[p] : gcd64(g, c[t]);
            low -= c[t] * u[t];
            i128 r = mod_pos(d, g);
            if (r > low) return fail(mask, d, m);
            i128 n = div_pos(low - r, g) + 1;
            if (split_p < 0 || n < split_n) {
                split_n = n; split_p = p; split_g = g; split_r = r;
            }
        }
        int64_t all = T ? T->all : gcd64(g, c[idx[m - 1]]);
        if (mod_pos(d, all)) return fail(mask, d, m);
        // one target for the lower part: split without looking at the branches
        if (split_p > 1 && split_n == 1) return split(mask, m, d, split_p, split_n, split_g, split_r);
        suf[m] = 0;
        if (!T)
            for (int t = m - 1; t > 0; --t) suf[t] = gcd64(suf[t + 1], c[idx[t]]);
        // the term whose branches leave the densest rest: fewest candidates times the rest's
        // range (doubles, rounded as Python's floats are; ties: the largest c)
        int best = -1, best_t = 0;
        double best_score = 0;
        i128 best_lo = 0, best_hi = 0;
        int64_t best_mod = 1;
        for (int t = 0; t < m; ++t) {
            int i = idx[t];
            int64_t mod = T ? T->mod[t] : gcd64(pre[t], suf[t + 1]) / all;
            i128 lo, hi;
            z_range64(d, c[i], u[i], tot - c[i] * u[i], lo, hi);
            if (lo > hi) return fail(mask, d, m);
            double score = double(div_pos(hi - lo, mod) + 1) * double(tot - c[i] * u[i]);
            if (best < 0 || score < best_score) {
                best = i; best_t = t; best_score = score; best_lo = lo; best_hi = hi; best_mod = mod;
            }
        }
        int i = best;
        int64_t ci = c[i], mod = best_mod;
        i128 lo = best_lo, hi = best_hi, start = lo;
        if (mod > 1) {
            // z = (d/all) * (c/all)^-1  (mod m): both factors below m < 2^63
            int64_t inv = T ? T->inv[best_t] : modinv64(ci / all, mod);
            int64_t r = mulmod64(mod64(div_pos(d, all), mod), inv, mod);
            start = lo + mod64(r - lo, mod);
        }
        if (start > hi) return fail(mask, d, m);
        i128 nbranch = div_pos(hi - start, mod) + 1;
        if (split_p > 1 && split_n < nbranch) return split(mask, m, d, split_p, split_n, split_g, split_r);
        u128 sub = mask & ~(u128(1) << i);
        i128 top = start + (nbranch - 1) * mod;
        i128 want = fdiv64(d - (tot - ci * u[i]) / 2, ci);  // rest's target mid-range
        i128 z = want <= start ? start : want >= top ? top : start + div_pos(want - start, mod) * mod;
        // three terms: after a couple of branches (solutions are often dense), count the
        // solutions of all the branches at once
        bool count = m == 3 && nbranch > THREE_TERMS_COUNT;
        long tries = 0;
        for (i128 up = z, down = z - mod; up <= top || down >= start;) {
            if (count && tries >= THREE_TERMS_TRIES) {
                count = false;
                int p = idx[0] == i ? idx[1] : idx[0], q = idx[2] == i ? idx[1] : idx[2];
                try {
                    work += THREE_TERMS_COUNT - 1;  // a count costs about as much as that many leaves
                    tick();
                    if (!T->counted[best_t]) {
                        T->k[best_t] = count3_static(c[p], c[q], ci, mod);
                        T->counted[best_t] = true;
                    }
                    return count3(T->k[best_t], u[p], u[q], ci, start, nbranch, d) > 0;
                } catch (Overflow&) {
                    // values too large for the count: go on branching
                }
            }
            if (up <= top) {
                tick();
                ++tries;
                if (rec(sub, d - ci * up)) return true;
                up += mod;
            }
            if (down >= start) {
                tick();
                ++tries;
                if (rec(sub, d - ci * down)) return true;
                down -= mod;
            }
        }
        return fail(mask, d, m);
    }
};

// _dfs with an excluded solution (used for internal overlap).
struct ExcludeSearch {
    struct Level { i128 c, u, rest_max, mod, inv, h; };
    Level levels[MAX_TERMS];
    int k;
    const i128* exclude;
    FailedSet failed;
    long work = 0, budget;

    ExcludeSearch(const Term* t, int n, const i128* ex, long b) : k(n), exclude(ex), budget(b) {
        i128 rest_max = 0, g = 0;
        for (int i = k; i-- > 0;) {
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
        if (i == k - 1) {
            if (d % L.c) return false;
            i128 z = d / L.c;
            if (z > L.u || (!dev && z == exclude[i])) return false;
            return true;
        }
        u128 key = u128(i) * 2 + (dev ? 1 : 0) + 1;
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

// search.solve(terms, d) without exclusion, as a yes/no answer.  Reorders `terms`.
inline int solve(Term* terms, int n, i128 d, long budget) {
    if (d < 0) return NO;
    // sort by decreasing c (insertion sort: a handful of terms), clamp u <= d / c and drop
    // the terms that can then only be 0 (as NumPy's diophantine_simplify does)
    int k = 0;
    i128 total = 0;
    int64_t g = 0;
    for (int t = 0; t < n; ++t) {
        Term x = terms[t];
        i128 cap = d / x.c;
        if (x.u > cap) x.u = cap;
        if (x.u == 0) continue;
        total = bounded(add(total, mul(x.c, x.u)));
        g = gcd64(g, int64_t(x.c));
        int s = k++;
        while (s > 0 && terms[s - 1].c < x.c) {
            terms[s] = terms[s - 1];
            --s;
        }
        terms[s] = x;
    }
    if (k == 0) return d == 0 ? YES : NO;
    if (d > total || mod_pos(d, g)) return NO;
    try {
        SplitSearch s(terms, k, budget);
        u128 mask = k == MAX_TERMS ? ~u128(0) : (u128(1) << k) - 1;
        return s.rec(mask, d) ? YES : NO;
    } catch (Exhausted&) {
        return EXHAUSTED;
    }
}

// api._pair(..., want=False): do two normal forms share a cell?
inline int pair(const Normal& a, const Normal& b, long budget) {
    if (a.empty || b.empty) return NO;
    if (a.hi < b.lo || b.hi < a.lo) return NO;
    if (a.lo == b.lo || a.hi == b.hi) return YES;
    // a.x + b.(n-1-y) = b.hi - a.lo with positive coefficients; equal strides merged
    i128 d = sub(b.hi, a.lo);
    Term terms[MAX_TERMS];
    int n = 0;
    for (int k = 0; k < a.n; ++k) terms[n++] = Term{a.strides[k], a.sizes[k] - 1};
    // both stride lists ascend: merge them
    for (int k = 0, t = 0; k < b.n; ++k) {
        while (t < a.n && a.strides[t] < b.strides[k]) ++t;
        if (t < a.n && a.strides[t] == b.strides[k])
            terms[t].u += b.sizes[k] - 1;  // both below 2^110
        else
            terms[n++] = Term{b.strides[k], b.sizes[k] - 1};
    }
    return solve(terms, n, d, budget);
}

inline int pair(const NormalForm& a, const NormalForm& b, long budget) {
    Normal x, y;
    x.empty = a.empty;
    y.empty = b.empty;
    x.lo = a.lo; x.hi = a.hi; y.lo = b.lo; y.hi = b.hi;
    x.n = int(a.strides.size());
    y.n = int(b.strides.size());
    for (int k = 0; k < x.n; ++k) { x.strides[k] = int64_t(a.strides[k]); x.sizes[k] = a.sizes[k]; }
    for (int k = 0; k < y.n; ++k) { y.strides[k] = int64_t(b.strides[k]); y.sizes[k] = b.sizes[k]; }
    return pair(x, y, budget);
}

inline int intersects(const Layout& a, const Layout& b, long budget = DEFAULT_BUDGET) {
    // an empty layout meets nothing, whichever side it is on (before any arithmetic on the
    // other side can overflow: the answer must not depend on the order)
    for (int j = 0; j < a.ndim; ++j)
        if (a.shape[j] == 0) return NO;
    for (int j = 0; j < b.ndim; ++j)
        if (b.shape[j] == 0) return NO;
    try {
        Normal na, nb;
        normalise(a, na);
        if (na.empty) return NO;
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
        Term terms[MAX_NDIM];
        i128 ex[MAX_NDIM];
        i128 d = 0;
        for (int t = 0; t < k; ++t) {
            i128 u = dims[t].n - 1;
            terms[t] = Term{dims[t].s, bounded(mul(2, u))};
            ex[t] = u;
            d = bounded(add(d, mul(dims[t].s, u)));
        }
        // search.solve with exclude: sort by decreasing c, clamp (drop the exclusion when
        // the excluded point no longer fits)
        int order[MAX_NDIM];
        for (int t = 0; t < k; ++t) order[t] = t;
        std::stable_sort(order, order + k, [&](int x, int y) { return terms[x].c > terms[y].c; });
        Term st[MAX_NDIM];
        i128 sx[MAX_NDIM];
        bool keep_ex = true;
        for (int t = 0; t < k; ++t) {
            Term x = terms[order[t]];
            i128 cap = d / x.c;
            if (x.u > cap) {
                if (ex[order[t]] > cap) keep_ex = false;
                x.u = cap;
            }
            st[t] = x;
            sx[t] = ex[order[t]];
        }
        i128 total = 0, g = 0;
        for (int t = 0; t < k; ++t) {
            total = bounded(add(total, mul(st[t].c, st[t].u)));
            g = gcd(g, st[t].c);
        }
        if (d > total || d % g) return NO;
        if (!keep_ex) return solve(st, k, d, budget);
        try {
            ExcludeSearch s(st, k, sx, budget);
            return s.rec(0, d, false) ? YES : NO;
        } catch (Exhausted&) {
            return EXHAUSTED;
        }
    } catch (Overflow&) {
        return UNDECIDED;
    }
}

}  // namespace afn
