// Does one layout cover another (api.covers, up to enumerating cells)? Its product-form
// rule is a common mixed-radix decomposition of two normal forms ("sliced from one
// parent"). aliasflow/solver/radix.py is the readable reference, and this follows it step
// for step (the same candidate chains, tried in the same order, the same level drops), so
// that it finds a decomposition exactly when the reference does. Where one is found, the
// answer is exact either way: each cell is one tuple of digits, so b's cells are a's
// exactly when every level's progression of b lies in a's.
//
// Values are checked 128-bit integers (arith.hpp); Overflow propagates to the caller.
// Divisions by the (positive) chain units floor, as Python's // and % do (fdiv, fmod).
#pragma once

#include <algorithm>
#include <vector>

#include "overlap.hpp"

namespace afn {

namespace radix {

struct AP {
    i128 start, step, count;
};

typedef std::vector<i128> Chain;

// one layout of radix._try: offset, then (stride, size) dims ascending by stride
struct View {
    i128 off;
    int n;
    const int64_t* strides;
    const i128* sizes;
};

inline View view_of(const Normal& nf) { return View{nf.lo, nf.n, nf.strides, nf.sizes}; }

// radix._try for one view: true with its per-level progressions, or false with `drop`
// (-1: give up on this chain; else the level to drop)
inline bool try_view(const Chain& chain, const View& v, std::vector<AP>& aps, int& drop) {
    const int L = int(chain.size());
    aps.assign(size_t(L), AP{0, 1, 1});
    for (int k = 0; k + 1 < L; ++k)
        aps[size_t(k)].start = fmod(fdiv(v.off, chain[size_t(k)]),
                                    fdiv(chain[size_t(k + 1)], chain[size_t(k)]));
    aps[size_t(L - 1)].start = fdiv(v.off, chain[size_t(L - 1)]);
    // the dims still to place, front first (a split dim puts its upper part in front)
    std::vector<std::pair<i128, i128>> dims;
    for (int k = v.n - 1; k >= 0; --k) dims.emplace_back(v.strides[k], v.sizes[k]);
    while (!dims.empty()) {
        i128 s = dims.back().first, n = dims.back().second;
        dims.pop_back();
        int lev = 0;
        for (int kk = L - 1; kk >= 0; --kk) {
            i128 t = chain[size_t(kk)];
            if (t <= s && s % t == 0) {
                lev = kk;
                break;
            }
        }
        i128 m = s / chain[size_t(lev)];
        if (aps[size_t(lev)].count != 1) {
            drop = -1;  // two dims on one level: not a product of progressions
            return false;
        }
        i128 start = aps[size_t(lev)].start;
        if (lev < L - 1) {
            i128 radix = chain[size_t(lev + 1)] / chain[size_t(lev)];
            if (add(start, mul(m, n - 1)) >= radix) {
                i128 q = radix / m;
                if (radix % m == 0 && start < m && n % q == 0) {
                    // whole blocks of the next level: split the dim over it
                    dims.emplace_back(chain[size_t(lev + 1)], n / q);
                    n = q;
                } else {
                    drop = lev + 1;  // carry: coarsen by dropping the next level
                    return false;
                }
            }
        }
        aps[size_t(lev)] = AP{start, m, n};
    }
    return true;
}

// radix._try over both views
inline bool try_chain(const Chain& chain, const View& a, const View& b, std::vector<AP>& pa,
                      std::vector<AP>& pb, int& drop) {
    return try_view(chain, a, pa, drop) && try_view(chain, b, pb, drop);
}

inline Chain chain_up(const std::vector<i128>& sorted) {
    Chain fixed{1};
    for (i128 t : sorted) {
        if (t <= fixed.back()) continue;
        if (t % fixed.back() == 0)
            fixed.push_back(t);
        else if (fixed.size() > 1 && t % fixed[fixed.size() - 2] == 0)
            fixed.back() = t;  // prefer the larger: the smaller was probably a stepped stride
    }
    return fixed;
}

inline Chain chain_down(const std::vector<i128>& sorted, i128 start) {
    Chain top{start};
    for (auto it = sorted.rbegin(); it != sorted.rend(); ++it)
        if (*it < top.back() && top.back() % *it == 0) top.push_back(*it);
    if (top.back() != 1) top.push_back(1);
    Chain chain(top.rbegin(), top.rend());
    for (i128 t : sorted)
        if (t > chain.back() && t % chain.back() == 0) chain.push_back(t);
    return chain;
}

inline void sort_unique(std::vector<i128>& v) {
    std::sort(v.begin(), v.end());
    v.erase(std::unique(v.begin(), v.end()), v.end());
}

// radix.product_form: true with the chain and the per-level progressions of both, or false
inline bool product_form(const View& a, const View& b, std::vector<AP>& pa, std::vector<AP>& pb,
                         Chain* found = nullptr) {
    std::vector<i128> strides{1}, both;
    for (const View* v : {&a, &b})
        for (int k = 0; k < v->n; ++k) strides.push_back(v->strides[k]);
    sort_unique(strides);
    both = strides;
    for (const View* v : {&a, &b})
        for (int k = 0; k < v->n; ++k) both.push_back(mul(v->strides[k], v->sizes[k]));
    sort_unique(both);
    // parent strides hidden by merging or stepping show up as gcds (offsets rounded down
    // to each stride reveal parent strides too)
    std::vector<i128> vals = both;
    for (const View* v : {&a, &b})
        for (i128 s : strides) {
            i128 r = sub(v->off, fmod(v->off, s));
            vals.push_back(r < 0 ? -r : r);
        }
    sort_unique(vals);
    std::vector<i128> gcds;
    for (size_t i = 0; i < vals.size(); ++i)
        for (size_t j = i + 1; j < vals.size(); ++j) {
            i128 g = gcd(vals[i], vals[j]);
            if (g != 0) gcds.push_back(g);
        }
    both.insert(both.end(), gcds.begin(), gcds.end());
    sort_unique(both);
    const Chain candidates[5] = {chain_down(both, strides.back()), chain_down(both, both.back()),
                                 chain_down(strides, strides.back()), chain_up(both),
                                 chain_up(strides)};
    for (int c = 0; c < 5; ++c) {
        bool seen = false;
        for (int t = 0; t < c; ++t) seen |= candidates[t] == candidates[c];
        if (seen) continue;
        Chain chain = candidates[c];
        for (size_t round = 0, rounds = chain.size() + 1; round < rounds; ++round) {
            int drop = -1;
            if (try_chain(chain, a, b, pa, pb, drop)) {
                if (found) *found = chain;
                return true;
            }
            if (drop < 0 || drop >= int(chain.size())) break;
            chain.erase(chain.begin() + drop);
        }
    }
    return false;
}

// radix.ap_subset: is progression q inside progression p?
inline bool ap_subset(AP q, AP p) {
    if (q.count == 0) return true;
    if (p.count == 1) p.step = 1;
    if (q.count == 1) q.step = 0;
    i128 last_q = add(q.start, mul(q.step, q.count - 1));
    if (q.start < p.start || last_q > add(p.start, mul(p.step, p.count - 1))) return false;
    if (fmod(q.start - p.start, p.step)) return false;
    return q.step % p.step == 0;
}

}  // namespace radix

// Is one of b's corner cells (its lowest and highest, and their neighbours along each dim:
// cells, as normal-form sizes are at least 2) certainly not a cell of a?
inline bool corner_outside(const Normal& a, const Normal& b) {
    constexpr long CELL_BUDGET = 2000;  // per cell; past it the cell proves nothing
    Normal point;  // no dims: the one cell lo == hi
    auto outside = [&](i128 x) {
        point.lo = point.hi = x;
        return pair(a, point, CELL_BUDGET) == NO;
    };
    if (outside(b.lo) || outside(b.hi)) return true;
    for (int k = 0; k < b.n; ++k)
        if (outside(b.lo + b.strides[k]) || outside(b.hi - b.strides[k])) return true;
    return false;
}

// api.covers(a, b) up to its last rule (enumerating b's cells): YES or NO as it answers,
// UNDECIDED where only that rule can answer. Throws Overflow. A corner cell of b outside
// a is an extra rule, never another answer: covers answers True only when b is inside a.
inline int covers(const Normal& a, const Normal& b) {
    if (b.empty) return YES;
    if (a.empty) return NO;
    if (b.lo < a.lo || b.hi > a.hi) return NO;
    if (a.lo == b.lo && a.n == b.n && std::equal(a.strides, a.strides + a.n, b.strides) &&
        std::equal(a.sizes, a.sizes + a.n, b.sizes))
        return YES;
    if (a.n == 0 || (a.n == 1 && a.strides[0] == 1)) return YES;
    if (corner_outside(a, b)) return NO;
    std::vector<radix::AP> pa, pb;
    if (!radix::product_form(radix::view_of(a), radix::view_of(b), pa, pb)) return UNDECIDED;
    for (size_t k = 0; k < pa.size(); ++k)
        if (!radix::ap_subset(pb[k], pa[k])) return NO;
    return YES;
}

}  // namespace afn
