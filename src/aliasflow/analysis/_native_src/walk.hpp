// The dependency walk in C++: the compiled twin of dependencies.ordering_edges (the Python
// code is the readable reference; the two produce the same edges in the same order).
//
// No Python here except through the Callbacks interface: walker.cpp lowers the program into
// a Rows table (cells of each memory group, as analysis/lower.py does) and supplies the
// callbacks for what only Python decides (layouts beyond the checked 128-bit range, searches
// past the compiled budget, covers tests beyond the cheap rules, progress).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "../../solver/_native_src/overlap.hpp"

namespace afw {

enum { READ = 0, WRITE = 1 };
enum { RAW = 0, WAR = 1, WAW = 2 };

// The access table (struct of arrays), rows in program order; see analysis/lower.py.
struct Rows {
    std::vector<int32_t> op, group;
    std::vector<int8_t> mode;
    std::vector<uint8_t> dense;
    std::vector<int64_t> low, high, offset;
    std::vector<int64_t> dims_start;  // n + 1 entries
    std::vector<int64_t> shape, stride;
    std::vector<int64_t> op_starts;   // n_ops + 1 entries
    int64_t size() const { return int64_t(op.size()); }
};

// A live access record: the op, the row it came from (its view), its extent in cells, and
// whether it is a dense piece cut from the row (then its layout is every cell of the extent).
struct Record {
    int32_t op, row;
    int64_t low, high;
    bool dense, piece, alive;
};

struct Edge { int32_t src, dst, kind, src_row, dst_row; };

// What only Python can answer; each returns false when a Python exception is set.
struct Callbacks {
    virtual bool intersects(const afn::Layout& a, const afn::Layout& b, bool& out) = 0;
    virtual bool covers(const afn::Layout& a, const afn::Layout& b, bool& out) = 0;
    virtual bool progress(int64_t n) = 0;  // also checks for signals
    virtual ~Callbacks() {}
};

// ---------------------------------------------------------------- windowed ancestor bitsets
// Bit d of an op's set: op (k - 1 - d) is an ancestor.  `words` 64-bit words; bits at or
// past `bits` are always zero.
struct Bits {
    int bits = 0, words = 0;
    uint64_t last_mask = ~uint64_t(0);
    void init(int n) {
        bits = n;
        words = (n + 63) / 64;
        last_mask = (n % 64) ? ((uint64_t(1) << (n % 64)) - 1) : ~uint64_t(0);
    }
    static bool test(const uint64_t* b, int64_t d) { return (b[d >> 6] >> (d & 63)) & 1; }
    // dst |= (src << k) | (1 << (k - 1)), truncated to `bits`; 1 <= k <= bits
    void or_shifted(uint64_t* dst, const uint64_t* src, int64_t k) const {
        int64_t ws = k >> 6, bs = k & 63;
        for (int64_t i = words - 1; i >= ws; --i) {
            uint64_t v = src[i - ws] << bs;
            if (bs && i - ws - 1 >= 0) v |= src[i - ws - 1] >> (64 - bs);
            dst[i] |= v;
        }
        int64_t d = k - 1;
        dst[d >> 6] |= uint64_t(1) << (d & 63);
        dst[words - 1] &= last_mask;
    }
    bool any(const uint64_t* b) const {
        for (int i = 0; i < words; ++i)
            if (b[i]) return true;
        return false;
    }
};

// ---------------------------------------------------------------- extent index (extents.py)
// Segment map: segs[i] holds the records (ascending ids) covering [bounds[i], bounds[i+1]).
class ExtentIndex {
    std::vector<int64_t> bounds;
    std::vector<std::vector<int32_t>> segs;
    int64_t live = 0;

    // position of the last bound <= x, or -1
    int64_t find(int64_t x, int64_t from = 0) const {
        return int64_t(std::upper_bound(bounds.begin() + from, bounds.end(), x) - bounds.begin()) - 1;
    }
    int64_t breakpoint(int64_t at) {
        int64_t i = find(at);
        if (i >= 0 && bounds[i] == at) return i;
        bounds.insert(bounds.begin() + i + 1, at);
        segs.insert(segs.begin() + i + 1, i >= 0 ? segs[i] : std::vector<int32_t>());
        return i + 1;
    }
    static void erase(std::vector<int32_t>& s, int32_t rid) {
        auto it = std::lower_bound(s.begin(), s.end(), rid);
        if (it != s.end() && *it == rid) s.erase(it);
    }
    void compact() {
        std::vector<int64_t> b;
        std::vector<std::vector<int32_t>> s;
        for (size_t i = 0; i < bounds.size(); ++i) {
            if (!s.empty() && s.back() == segs[i]) continue;
            b.push_back(bounds[i]);
            s.push_back(std::move(segs[i]));
        }
        bounds.swap(b);
        segs.swap(s);
    }

public:
    // `rid` must be larger than every id added before (ids only grow): segments stay sorted.
    void add(int32_t rid, int64_t low, int64_t high) {
        int64_t i = breakpoint(low);
        int64_t k = breakpoint(high + 1);
        for (int64_t t = i; t < k; ++t) segs[t].push_back(rid);
        ++live;
        if (int64_t(bounds.size()) > 8 * live + 64) compact();
    }
    void remove(int32_t rid, int64_t low, int64_t high) {
        int64_t i = find(low);
        if (i < 0) i = 0;
        int64_t k = find(high, i + 1) + 1;
        for (int64_t t = i; t < k && t < int64_t(segs.size()); ++t) erase(segs[t], rid);
        --live;
    }
    void cut(int32_t rid, int64_t low, int64_t high, int64_t keep_low, int64_t keep_high) {
        int64_t a = breakpoint(keep_low);
        int64_t b = breakpoint(keep_high + 1);
        int64_t i = std::max<int64_t>(find(low), 0);
        for (int64_t t = i; t < a; ++t) erase(segs[t], rid);
        int64_t k = find(high, b) + 1;
        for (int64_t t = b; t < k; ++t) erase(segs[t], rid);
    }
    // ids of the records whose extents meet [low, high], ascending, into `out`.  A record
    // spans many segments: `seen[rid] == mark` drops repeats before sorting (the caller
    // gives each query a fresh mark; `seen` has an entry per record id).
    void query(int64_t low, int64_t high, std::vector<int32_t>& out, std::vector<int64_t>& seen,
               int64_t mark) const {
        out.clear();
        if (bounds.empty()) return;
        int64_t i = find(low);
        if (i < 0) {
            if (high < bounds[0]) return;
            i = 0;
        }
        int64_t k = find(high, i + 1) + 1;
        if (k - i == 1) {
            out = segs[i];
            return;
        }
        for (int64_t t = i; t < k; ++t)
            for (int32_t rid : segs[t])
                if (seen[size_t(rid)] != mark) {
                    seen[size_t(rid)] = mark;
                    out.push_back(rid);
                }
        std::sort(out.begin(), out.end());
    }
};

struct PairHash {
    size_t operator()(const std::pair<int64_t, int64_t>& p) const {
        return std::hash<int64_t>()(p.first * 0x9E3779B97F4A7C15ULL ^ uint64_t(p.second));
    }
};

struct Memory {
    ExtentIndex reads, writes;
    std::unordered_map<std::pair<int64_t, int64_t>, int32_t, PairHash> last_read;
};

struct Params {
    bool retire = true;
    int prune = 0;          // bit 1 << kind: edges of that kind may be pruned when implied
    int64_t covers_limit = 4096;
    int window = 4096;
    int64_t progress_step = 1024;
};

// ---------------------------------------------------------------- the walk
class Walker {
public:
    Walker(const Rows& rows, int64_t n_ops, int64_t n_groups, const Params& p, Callbacks& cb)
        : R(rows), n_ops(n_ops), mem(size_t(n_groups)), P(p), cb(cb) {
        bits.init(p.window);
        anc.assign(size_t(p.window) * bits.words, 0);
        reach.assign(bits.words, 0);
        direct_stamp.assign(size_t(n_ops), -1);
    }

    std::vector<Edge> edges;

    // false: a Python exception is set (from a callback)
    bool run() {
        for (int64_t j = 0; j < n_ops; ++j) {
            if (!step(j)) return false;
            if (P.progress_step > 0 && j % P.progress_step == P.progress_step - 1)
                if (!cb.progress(P.progress_step)) return false;
        }
        if (P.progress_step > 0 && !cb.progress(n_ops % P.progress_step)) return false;
        return true;
    }

private:
    struct Found { int32_t op, kind, src_row, dst_row; };
    struct Piece { int64_t low, high; };
    struct Change { int32_t rid; int n; Piece p[2]; };  // n == 0: retire
    struct Pending { int32_t group, row; bool is_read; };

    const Rows& R;
    int64_t n_ops;
    std::vector<Memory> mem;
    std::vector<Record> records;
    Params P;
    Callbacks& cb;
    Bits bits;
    std::vector<uint64_t> anc, reach;
    std::vector<int64_t> direct_stamp;
    std::vector<int32_t> cand;
    std::vector<int64_t> seen;  // per record id: the last query that listed it
    int64_t mark = 0;
    std::vector<Found> found, kept;
    std::vector<Pending> pending;
    std::vector<Change> changed;

    uint64_t* ancestors(int64_t op) { return &anc[size_t(op % P.window) * bits.words]; }

    afn::Layout row_layout(int64_t r) const {
        afn::Layout L;
        L.offset = R.offset[r];
        L.ndim = int(R.dims_start[r + 1] - R.dims_start[r]);
        L.shape = R.shape.data() + R.dims_start[r];
        L.stride = R.stride.data() + R.dims_start[r];
        return L;
    }
    // a record's layout; a piece's points into `buf` (two int64s)
    afn::Layout rec_layout(const Record& rec, int64_t* buf) const {
        if (!rec.piece) return row_layout(rec.row);
        buf[0] = rec.high - rec.low + 1;
        buf[1] = 1;
        afn::Layout L;
        L.offset = rec.low;
        L.ndim = 1;
        L.shape = buf;
        L.stride = buf + 1;
        return L;
    }
    static bool same_layout(const afn::Layout& a, const afn::Layout& b) {
        if (a.offset != b.offset || a.ndim != b.ndim) return false;
        for (int k = 0; k < a.ndim; ++k)
            if (a.shape[k] != b.shape[k] || a.stride[k] != b.stride[k]) return false;
        return true;
    }

    bool meets(const Record& old, int64_t r, bool dense, bool& out) {
        if (dense && old.dense) {
            out = true;
            return true;
        }
        int64_t buf[2];
        afn::Layout a = rec_layout(old, buf), b = row_layout(r);
        int res = afn::intersects(a, b);
        if (res == afn::YES || res == afn::NO) {
            out = res == afn::YES;
            return true;
        }
        return cb.intersects(a, b, out);
    }

    // solver.covers(new, old) for a non-dense new write: the cheap exact rules here, the
    // rest in Python (the same function the reference calls)
    bool covers(int64_t r, const Record& old, bool& out) {
        int64_t buf[2];
        afn::Layout a = row_layout(r), b = rec_layout(old, buf);
        try {
            afn::NormalForm na, nb;
            afn::normalise(a, na);
            afn::normalise(b, nb);
            if (nb.empty) { out = true; return true; }
            if (na.empty) { out = false; return true; }
            if (nb.lo < na.lo || nb.hi > na.hi) { out = false; return true; }
            if (na.lo == nb.lo && na.strides == nb.strides && na.sizes == nb.sizes) {
                out = true;
                return true;
            }
            if (na.strides.empty() || (na.strides.size() == 1 && na.strides[0] == 1)) {
                out = true;
                return true;
            }
        } catch (afn::Overflow&) {
        }
        return cb.covers(a, b, out);
    }

    // _remainder: -1 keep as is, else number of pieces left (0: retire)
    bool remainder(int64_t r, bool dense, int64_t low, int64_t high, const Record& old,
                   Change& ch, bool& keep) {
        keep = false;
        ch.n = 0;
        if (dense) {
            if (low <= old.low && old.high <= high) return true;
            if (!old.dense) { keep = true; return true; }
            if (old.low < low) ch.p[ch.n++] = Piece{old.low, low - 1};
            if (high < old.high) ch.p[ch.n++] = Piece{high + 1, old.high};
            return true;
        }
        bool c;
        if (!covers(r, old, c)) return false;
        keep = !c;
        return true;
    }

    void set_reach(uint64_t* target, int64_t i, int64_t d) {
        // target |= (ancestors[i] << (d + 1)) | (1 << d)
        bits.or_shifted(target, ancestors(i), d + 1);
    }

    bool step(int64_t j) {
        found.clear();
        pending.clear();
        std::fill(reach.begin(), reach.end(), 0);
        const int64_t W = P.window;
        for (int64_t r = R.op_starts[j]; r < R.op_starts[j + 1]; ++r) {
            Memory& st = mem[size_t(R.group[r])];
            int64_t low = R.low[r], high = R.high[r];
            bool dense = R.dense[r];
            if (R.mode[r] == READ) {
                bool skip_raw = P.prune & (1 << RAW);
                st.writes.query(low, high, cand, seen, ++mark);
                for (int32_t rid : cand) {
                    const Record& old = records[size_t(rid)];
                    int64_t d = j - 1 - old.op;
                    if (skip_raw && d < W && Bits::test(reach.data(), d) &&
                        direct_stamp[size_t(old.op)] != j)
                        continue;
                    bool hit;
                    if (!meets(old, r, dense, hit)) return false;
                    if (hit) {
                        found.push_back(Found{old.op, RAW, old.row, int32_t(r)});
                        direct_stamp[size_t(old.op)] = j;
                        if (d < W) set_reach(reach.data(), old.op, d);
                    }
                }
                pending.push_back(Pending{R.group[r], int32_t(r), true});
                continue;
            }
            for (int which = 0; which < 2; ++which) {
                ExtentIndex& index = which == 0 ? st.reads : st.writes;
                int kind = which == 0 ? WAR : WAW;
                bool skip = P.prune & (1 << kind);
                changed.clear();
                index.query(low, high, cand, seen, ++mark);
                for (int32_t rid : cand) {
                    const Record old = records[size_t(rid)];
                    int64_t d = j - 1 - old.op;
                    Change ch;
                    ch.rid = rid;
                    bool keep;
                    if (skip && d < W && Bits::test(reach.data(), d) &&
                        direct_stamp[size_t(old.op)] != j) {
                        if (P.retire) {
                            if (dense) {
                                if (!remainder(r, dense, low, high, old, ch, keep)) return false;
                                if (!keep) changed.push_back(ch);
                            } else {
                                int64_t buf[2];
                                if (same_layout(rec_layout(old, buf), row_layout(r))) {
                                    ch.n = 0;
                                    changed.push_back(ch);
                                }
                            }
                        }
                        continue;
                    }
                    bool hit;
                    if (!meets(old, r, dense, hit)) return false;
                    if (hit) {
                        found.push_back(Found{old.op, kind, old.row, int32_t(r)});
                        direct_stamp[size_t(old.op)] = j;
                        if (d < W) set_reach(reach.data(), old.op, d);
                        if (P.retire) {
                            if (!remainder(r, dense, low, high, old, ch, keep)) return false;
                            if (!keep) changed.push_back(ch);
                        }
                    }
                }
                for (const Change& ch : changed) {
                    Record& old = records[size_t(ch.rid)];
                    if (old.dense) {
                        auto it = st.last_read.find({old.low, old.high});
                        if (it != st.last_read.end() && it->second == ch.rid) st.last_read.erase(it);
                    }
                    if (ch.n == 0) {
                        old.alive = false;
                        index.remove(ch.rid, old.low, old.high);
                        continue;
                    }
                    int64_t ol = old.low, oh = old.high;
                    Record base = old;
                    old.low = ch.p[0].low;
                    old.high = ch.p[0].high;
                    old.dense = true;
                    old.piece = true;
                    index.cut(ch.rid, ol, oh, old.low, old.high);
                    for (int t = 1; t < ch.n; ++t) {
                        Record piece = base;
                        piece.low = ch.p[t].low;
                        piece.high = ch.p[t].high;
                        piece.dense = true;
                        piece.piece = true;
                        piece.alive = true;
                        int32_t id = int32_t(records.size());
                        records.push_back(piece);
                        seen.push_back(0);
                        index.add(id, piece.low, piece.high);
                    }
                }
            }
            pending.push_back(Pending{R.group[r], int32_t(r), false});
        }
        uint64_t* mine = ancestors(j);
        if (P.prune) {
            if (!found.empty()) prune(j);
            else std::fill(mine, mine + bits.words, 0);
        } else if (found.size() > 1) {
            std::stable_sort(found.begin(), found.end(),
                             [](const Found& a, const Found& b) { return a.op < b.op; });
        }
        // records of op j go in after all of its accesses (an op never depends on itself)
        bool replace_reads = P.retire && (P.prune & (1 << WAR));
        bool have_reach = replace_reads && bits.any(mine);
        for (const Pending& pd : pending) {
            Memory& st = mem[size_t(pd.group)];
            int64_t r = pd.row;
            Record rec{int32_t(j), int32_t(r), R.low[r], R.high[r], bool(R.dense[r]), false, true};
            if (pd.is_read && rec.dense) {
                std::pair<int64_t, int64_t> key{rec.low, rec.high};
                auto it = st.last_read.find(key);
                if (have_reach && it != st.last_read.end()) {
                    Record& old = records[size_t(it->second)];
                    if (old.alive && old.low == rec.low && old.high == rec.high && old.dense) {
                        int64_t d = j - 1 - old.op;
                        if (0 <= d && d < W && Bits::test(mine, d)) {
                            old = rec;
                            continue;
                        }
                    }
                }
                st.last_read[key] = int32_t(records.size());
            }
            int32_t id = int32_t(records.size());
            records.push_back(rec);
            seen.push_back(0);
            (pd.is_read ? st.reads : st.writes).add(id, rec.low, rec.high);
        }
        if (!found.empty()) {
            // pieces of one cut record meet the same access once each: keep the first
            size_t start = edges.size();
            for (const Found& f : found) {
                bool dup = false;
                for (size_t e = start; e < edges.size(); ++e) {
                    const Edge& x = edges[e];
                    if (x.src == f.op && x.kind == f.kind && x.src_row == f.src_row &&
                        x.dst_row == f.dst_row) {
                        dup = true;
                        break;
                    }
                }
                if (!dup) edges.push_back(Edge{f.op, int32_t(j), f.kind, f.src_row, f.dst_row});
            }
        }
        return true;
    }

    void prune(int64_t j) {
        std::stable_sort(found.begin(), found.end(),
                         [](const Found& a, const Found& b) { return a.op > b.op; });
        uint64_t* mine = ancestors(j);
        // `reach` is free here: reuse it for the kept edges' ancestors
        std::fill(reach.begin(), reach.end(), 0);
        kept.clear();
        int64_t W = P.window;
        int32_t last_source = -1;  // found is sorted by op: sources form a run
        bool last_kept = false;
        for (const Found& f : found) {
            int64_t d = j - 1 - f.op;
            if (!(f.op == last_source && last_kept)) {
                if ((P.prune & (1 << f.kind)) && d < W && Bits::test(reach.data(), d)) {
                    last_source = f.op;
                    last_kept = false;
                    continue;
                }
                last_source = f.op;
                last_kept = true;
                if (d < W) set_reach(reach.data(), f.op, d);
            }
            kept.push_back(f);
        }
        std::copy(reach.begin(), reach.end(), mine);
        std::stable_sort(kept.begin(), kept.end(),
                         [](const Found& a, const Found& b) { return a.op < b.op; });
        found.swap(kept);
    }
};

}  // namespace afw
