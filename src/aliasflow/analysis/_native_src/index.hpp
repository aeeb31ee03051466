// Pieces of the compiled dependency walk that need nothing else: the windowed ancestor
// bitsets (dependencies._prune's big ints) and the index of live records by extent (the
// question extents.py answers).
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>
#include <utility>
#include <vector>

namespace afw {

// ---------------------------------------------------------------- windowed ancestor bitsets
// Bit d of an op's set: op (k - 1 - d) is an ancestor.  `words` 64-bit words; bits at or
// past `bits` are always zero.  A set's length is a count of words past which all are zero:
// most ops' ancestors are recent, and the work goes with the length, not the window.
struct Bits {
    int bits = 0, words = 0;
    uint64_t last_mask = ~uint64_t(0);
    void init(int n) {
        bits = n;
        words = (n + 63) / 64;
        last_mask = (n % 64) ? ((uint64_t(1) << (n % 64)) - 1) : ~uint64_t(0);
    }
    static bool test(const uint64_t* b, int64_t d) { return (b[d >> 6] >> (d & 63)) & 1; }
    // dst |= src << k, truncated to `bits`; 1 <= k <= bits.  src has length src_len;
    // returns a length for what this adds to dst.
    int or_shifted(uint64_t* dst, const uint64_t* src, int src_len, int64_t k) const {
        if (src_len == 0) return 0;
        int64_t ws = k >> 6, bs = k & 63;
        // src[src_len] is zero (or past the end, when the top is words - 1): it may carry
        int64_t top = std::min<int64_t>(words - 1, ws + src_len);
        for (int64_t i = top; i >= ws; --i) {
            uint64_t v = src[i - ws] << bs;
            if (bs && i - ws - 1 >= 0) v |= src[i - ws - 1] >> (64 - bs);
            dst[i] |= v;
        }
        dst[words - 1] &= last_mask;
        return int(top + 1);
    }
    // dst |= every bit from p up (truncated to `bits`); returns a length for it
    int fill_from(uint64_t* dst, int64_t p) const {
        if (p >= bits) return 0;
        int64_t w = p >> 6;
        dst[w] |= ~uint64_t(0) << (p & 63);
        for (int64_t i = w + 1; i < words; ++i) dst[i] = ~uint64_t(0);
        dst[words - 1] &= last_mask;
        return words;
    }
    // sets bit d (< bits); returns a length for it
    static int set(uint64_t* b, int64_t d) {
        b[d >> 6] |= uint64_t(1) << (d & 63);
        return int((d >> 6) + 1);
    }
    static bool any(const uint64_t* b, int len) {
        for (int i = 0; i < len; ++i)
            if (b[i]) return true;
        return false;
    }
};

// ---------------------------------------------------------------- column boxes
// A group's memory read as rows of `len` cells (up to three lengths, read off the strides
// of its first accesses: a C-ordered view gives its tensor's rows). For each length, a
// layout whose cells, modulo it, never wrap past a row end keeps to a column range
// [lo, hi]; one that wraps gets the whole row. Accesses whose ranges miss each other in
// any one length share no cell: per-head column blocks and transposed tiles have extents
// that interleave, but columns that do not.
struct Levels {
    int n = 0;
    int64_t len[3] = {0, 0, 0};  // each in [2, 2^31)
};

struct Box {
    int32_t lo[3] = {0, 0, 0}, hi[3] = {INT32_MAX, INT32_MAX, INT32_MAX};
    bool meets(const Box& o) const {
        return lo[0] <= o.hi[0] && o.lo[0] <= hi[0] && lo[1] <= o.hi[1] && o.lo[1] <= hi[1] &&
               lo[2] <= o.hi[2] && o.lo[2] <= hi[2];
    }
};

// Row lengths read off one layout: its distinct |strides| in [2, 2^31) over dims of more
// than one index, smallest first, at most three (a C-ordered view gives its tensor's rows).
inline Levels levels_from_strides(int ndim, const int64_t* shape, const int64_t* stride) {
    int64_t got[8];
    int n = 0;
    for (int d = 0; d < ndim && n < 8; ++d) {
        if (shape[d] <= 1 || stride[d] == INT64_MIN) continue;
        int64_t s = stride[d] < 0 ? -stride[d] : stride[d];
        if (s < 2 || s >= INT32_MAX) continue;
        bool seen = false;
        for (int k = 0; k < n; ++k) seen |= got[k] == s;
        if (!seen) got[n++] = s;
    }
    std::sort(got, got + n);
    Levels L;
    for (int k = 0; k < n && L.n < 3; ++k) L.len[L.n++] = got[k];
    return L;
}

// The box of the cells offset + sum(i[d] * stride[d]), 0 <= i[d] < shape[d].
inline Box box_of(int64_t offset, int ndim, const int64_t* shape, const int64_t* stride,
                  const Levels& lv) {
    Box b;
    for (int k = 0; k < lv.n; ++k) {
        const int64_t m = lv.len[k];
        int64_t c0 = offset % m;
        if (c0 < 0) c0 += m;
        // cell == c0 + sum(i[d] * (stride[d] % m)) (mod m); when that sum stays in
        // [0, m) it is the column itself
        __int128 lo = c0, hi = c0;
        for (int d = 0; d < ndim; ++d) {
            if (shape[d] <= 1) continue;
            __int128 span = __int128(stride[d] % m) * (shape[d] - 1);
            (span < 0 ? lo : hi) += span;
        }
        if (lo >= 0 && hi < m) {
            b.lo[k] = int32_t(lo);
            b.hi[k] = int32_t(hi);
        } else {
            b.lo[k] = 0;
            b.hi[k] = int32_t(m - 1);
        }
    }
    return b;
}

// ---------------------------------------------------------------- extent index
// The same question as extents.py's segment map (which live records' extents meet
// [low, high]), answered differently: records are kept once each, by extent length class
// (lengths in [2^c, 2^(c+1))), sorted by low within a class.  A record of class c meeting
// [low, high] has its low in [low - 2^(c+1) + 2, high]; the few classes in use are each one
// ordered range scan, with at most a factor two of extra candidates filtered by `high`.
// Records whose column boxes miss the query's are left out too (they share no cell).
class ExtentIndex {
    // `seq` orders records as they were made (the reference's record ids); `rid` is the
    // slot the record lives in (slots of retired records are reused)
    struct Entry {
        int64_t low, high, seq;
        int32_t rid;
        Box box;
        bool operator<(const Entry& o) const { return low < o.low || (low == o.low && seq < o.seq); }
    };
    // Entries sorted by (low, seq) in blocks of at most 2 * BLOCK: a scan reads contiguous
    // memory, an insert or erase moves at most one block's tail.
    class Sorted {
        static constexpr size_t BLOCK = 64;
        std::vector<std::vector<Entry>> blocks;  // each non-empty; ordered
        // the first block whose last entry is not below `e` (blocks.size() if none)
        size_t find(const Entry& e) const {
            size_t lo = 0, hi = blocks.size();
            while (lo < hi) {
                size_t mid = (lo + hi) / 2;
                if (blocks[mid].back() < e) lo = mid + 1;
                else hi = mid;
            }
            return lo;
        }

    public:
        bool empty() const { return blocks.empty(); }
        void insert(const Entry& e) {
            if (blocks.empty()) {
                blocks.emplace_back(1, e);
                return;
            }
            size_t b = std::min(find(e), blocks.size() - 1);
            std::vector<Entry>& v = blocks[b];
            v.insert(std::upper_bound(v.begin(), v.end(), e), e);
            if (v.size() > 2 * BLOCK) {
                std::vector<Entry> tail(v.begin() + BLOCK, v.end());
                v.resize(BLOCK);
                blocks.insert(blocks.begin() + b + 1, std::move(tail));
            }
        }
        void erase(const Entry& e) {
            size_t b = find(e);
            if (b == blocks.size()) return;
            std::vector<Entry>& v = blocks[b];
            auto it = std::lower_bound(v.begin(), v.end(), e);
            if (it == v.end() || it->low != e.low || it->seq != e.seq) return;
            v.erase(it);
            if (v.empty()) blocks.erase(blocks.begin() + b);
        }
        // f(entry) for entries from the first not below `from` while low <= `high`
        template <class F>
        void scan(const Entry& from, int64_t high, F f) const {
            const size_t first = find(from);
            for (size_t b = first; b < blocks.size(); ++b) {
                const std::vector<Entry>& v = blocks[b];
                auto it = b == first ? std::lower_bound(v.begin(), v.end(), from) : v.begin();
                for (; it != v.end(); ++it) {
                    if (it->low > high) return;
                    f(*it);
                }
            }
        }
    };
    Sorted classes[64];
    uint64_t used = 0;  // bit c: classes[c] is not empty
    std::vector<std::pair<int64_t, int32_t>> hits;  // query's (seq, rid)

    static int class_of(int64_t low, int64_t high) {
        uint64_t len = uint64_t(high - low) + 1;
        return 63 - __builtin_clzll(len);
    }

public:
    void add(int32_t rid, int64_t seq, int64_t low, int64_t high, const Box& box) {
        int c = class_of(low, high);
        classes[c].insert(Entry{low, high, seq, rid, box});
        used |= uint64_t(1) << c;
    }
    void remove(int64_t seq, int64_t low, int64_t high) {
        int c = class_of(low, high);
        classes[c].erase(Entry{low, high, seq, 0, Box()});
        if (classes[c].empty()) used &= ~(uint64_t(1) << c);
    }
    void cut(int32_t rid, int64_t seq, int64_t low, int64_t high, int64_t keep_low,
             int64_t keep_high, const Box& box) {
        if (low == keep_low && high == keep_high) return;
        remove(seq, low, high);
        add(rid, seq, keep_low, keep_high, box);
    }
    // slots of the records whose extents and boxes meet [low, high] and `box`, in the
    // order the records were made
    void query(int64_t low, int64_t high, const Box& box, std::vector<int32_t>& out) {
        hits.clear();
        for (uint64_t bits = used; bits; bits &= bits - 1) {
            int c = __builtin_ctzll(bits);
            // lengths below 2^(c+1): lows from low - 2^(c+1) + 2 can reach `low`
            int64_t from = c >= 62 ? INT64_MIN : low - (int64_t(1) << (c + 1)) + 2;
            classes[c].scan(Entry{from, INT64_MIN, INT64_MIN, 0, Box()}, high,
                            [&](const Entry& e) {
                                if (e.high >= low && e.box.meets(box))
                                    hits.emplace_back(e.seq, e.rid);
                            });
        }
        std::sort(hits.begin(), hits.end());
        out.clear();
        for (const auto& h : hits) out.push_back(h.second);
    }
};

struct PairHash {
    size_t operator()(const std::pair<int64_t, int64_t>& p) const {
        return std::hash<int64_t>()(p.first * 0x9E3779B97F4A7C15ULL ^ uint64_t(p.second));
    }
};

}  // namespace afw
