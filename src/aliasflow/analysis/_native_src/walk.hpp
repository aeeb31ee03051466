// The dependency walk in C++: the compiled twin of dependencies.ordering_edges (the Python
// code is the readable reference; the two produce the same edges in the same order).
//
// No Python here except through the Callbacks interface: walker.cpp lowers the program into
// a Rows table (cells of each memory group, as analysis/lower.py does) and supplies the
// callbacks for what only Python decides (layouts beyond the checked 128-bit range, searches
// past the compiled budget, covers tests beyond the cheap rules, progress).
#pragma once

#include <algorithm>
#include <climits>
#include <deque>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <new>
#include <unordered_map>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

#include "../../solver/_native_src/overlap.hpp"
#include "../../solver/_native_src/radix.hpp"
#include "index.hpp"

namespace afw {

enum { READ = 0, WRITE = 1 };
enum { RAW = 0, WAR = 1, WAW = 2 };

// The access table, rows in program order (see analysis/lower.py). A row is one access:
// (op, mode, view). Its cells are its view's: the view's group, extent and layout in the
// group's cells. Rows of one view (programs reuse views a lot) share that, and a row's op
// is its place between op_starts, so a row costs five bytes and the per-view answers below
// (normal forms, shape ids, cells) are made once per view.
struct Rows {
    // per row (its op: the row's place between op_starts)
    std::vector<int32_t> view;
    std::vector<int8_t> mode;
    std::vector<int32_t> op_starts;   // n_ops + 1 entries
    // per view; view v's dims are shape/stride[v_dims_start[v] : v_dims_start[v] + v_ndim[v]]
    std::vector<int32_t> v_group;
    std::vector<uint8_t> v_dense;
    std::vector<int64_t> v_low, v_high, v_offset, v_dims_start;
    std::vector<int8_t> v_ndim;
    std::vector<int64_t> shape, stride;

    int64_t size() const { return int64_t(view.size()); }
    int64_t n_views() const { return int64_t(v_low.size()); }
    size_t v(int64_t r) const { return size_t(view[size_t(r)]); }
    int32_t group(int64_t r) const { return v_group[v(r)]; }
    int64_t low(int64_t r) const { return v_low[v(r)]; }
    int64_t high(int64_t r) const { return v_high[v(r)]; }
    int64_t offset(int64_t r) const { return v_offset[v(r)]; }
    bool dense(int64_t r) const { return v_dense[v(r)]; }
    int ndim(int64_t r) const { return v_ndim[v(r)]; }
    const int64_t* shape_of(int64_t r) const { return shape.data() + v_dims_start[v(r)]; }
    const int64_t* stride_of(int64_t r) const { return stride.data() + v_dims_start[v(r)]; }
    // drop the growth slack (one array at a time, so the peak grows by one array at most)
    void shrink() {
        view.shrink_to_fit(); mode.shrink_to_fit();
        op_starts.shrink_to_fit();
        v_group.shrink_to_fit(); v_dense.shrink_to_fit(); v_low.shrink_to_fit();
        v_high.shrink_to_fit(); v_offset.shrink_to_fit(); v_dims_start.shrink_to_fit();
        v_ndim.shrink_to_fit(); shape.shrink_to_fit(); stride.shrink_to_fit();
    }
};

// A live access record: the op, the row it came from (its view), its extent in cells, and
// whether it is a dense piece cut from the row (then its layout is every cell of the extent).
struct Record {
    int32_t op, row;
    int64_t low, high;
    bool dense, piece, alive;
    int32_t left = -1;  // a non-dense record's cells not yet overwritten: lefts[left]
    Box box;            // of the row's cells (a superset of the cells left)
    int64_t seq = 0;    // order of making (the reference's record id); set by add_record
};

// An edge: the rows of its two accesses, the later one's with the kind in its low two bits
// (rows stay below 2^29: the entry points check). A row's op is its place between
// op_starts, so the ops need no room here: eight bytes an edge, not twenty.
struct Edge { int32_t src_row, dst_row_kind; };

// The edges, in one array that grows without a copy: on Linux its own mapping, grown by
// mremap (malloc's realloc copies blocks below its mmap threshold, which glibc raises as a
// process frees large blocks, and the copy holds the edges twice at the peak); elsewhere
// realloc. Pages past the end are never touched. walker.cpp hands the array to Python as
// it is (an EdgeBuffer), so the edges are never copied either.
namespace edge_memory {
#if defined(__linux__)
inline size_t round(size_t bytes) {
    static const size_t page = size_t(sysconf(_SC_PAGESIZE));
    return (bytes + page - 1) / page * page;
}
// `old` (of `old_bytes`, 0 for none) resized to at least `bytes` (> 0); nullptr if refused
inline void* resize(void* old, size_t old_bytes, size_t bytes, size_t& got) {
    got = round(bytes);
    void* p = old ? mremap(old, round(old_bytes), got, MREMAP_MAYMOVE)
                  : mmap(nullptr, got, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? nullptr : p;
}
inline void free(void* p, size_t bytes) {
    if (p) munmap(p, round(bytes));
}
#else
inline void* resize(void* old, size_t, size_t bytes, size_t& got) {
    got = bytes;
    return std::realloc(old, bytes);
}
inline void free(void* p, size_t) { std::free(p); }
#endif
}  // namespace edge_memory

class EdgeList {
public:
    EdgeList() = default;
    EdgeList(const EdgeList&) = delete;
    EdgeList& operator=(const EdgeList&) = delete;
    ~EdgeList() { edge_memory::free(data, cap * sizeof(Edge)); }
    void swap(EdgeList& o) {
        std::swap(data, o.data);
        std::swap(n, o.n);
        std::swap(cap, o.cap);
    }
    size_t size() const { return n; }
    void push_back(const Edge& x) {
        if (n == cap) {
            size_t grown = cap ? 2 * cap : 1024, bytes;
            void* p = edge_memory::resize(data, cap * sizeof(Edge), grown * sizeof(Edge), bytes);
            if (!p) throw std::bad_alloc();
            data = static_cast<Edge*>(p);
            cap = bytes / sizeof(Edge);
        }
        data[n++] = x;
    }
    // the array (nullptr when empty) and its capacity in bytes, now the caller's to free
    // with edge_memory::free; trimmed to its size
    Edge* release(size_t& size, size_t& capacity_bytes) {
        if (n && n < cap) {
            size_t bytes;
            if (void* p = edge_memory::resize(data, cap * sizeof(Edge), n * sizeof(Edge), bytes)) {
                data = static_cast<Edge*>(p);
                cap = bytes / sizeof(Edge);
            }
        }
        Edge* out = n ? data : nullptr;
        capacity_bytes = n ? cap * sizeof(Edge) : 0;
        if (!n) edge_memory::free(data, cap * sizeof(Edge));
        size = n;
        data = nullptr;
        n = cap = 0;
        return out;
    }

private:
    Edge* data = nullptr;
    size_t n = 0, cap = 0;  // cap: edges that fit in the array
};

// What only Python can answer; each returns false when a Python exception is set.
struct Callbacks {
    virtual bool intersects(const afn::Layout& a, const afn::Layout& b, bool& out) = 0;
    virtual bool covers(const afn::Layout& a, const afn::Layout& b, bool& out) = 0;
    virtual bool progress(int64_t n) = 0;  // also checks for signals
    virtual ~Callbacks() {}
};

struct Memory {
    ExtentIndex reads, writes;
    Levels levels;
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
        // each group's row lengths come from the strides of its first accesses (up to 64
        // rows looked at, three lengths kept): any lengths give exact boxes, these prune
        std::vector<int> looked(mem.size(), 0);  // rows looked at; 64: done
        size_t open = mem.size();                 // groups not done
        for (int64_t r = 0; r < R.size() && open; ++r) {
            size_t g = size_t(R.group(r));
            if (looked[g] >= 64) continue;
            Levels found = levels_from_strides(R.ndim(r), R.shape_of(r), R.stride_of(r));
            Levels& L = mem[g].levels;
            for (int k = 0; k < found.n && L.n < 3; ++k) {
                bool seen = false;
                for (int t = 0; t < L.n; ++t) seen |= L.len[t] == found.len[k];
                if (!seen) L.len[L.n++] = found.len[k];
            }
            if (++looked[g] == 64 || L.n == 3) {
                looked[g] = 64;
                --open;
            }
        }
        bits.init(p.window);
        // slots op % window for the ops there are: a short program (a run of a few ops
        // analysed before it starts) makes a few sets, not the window's 4096 allocations
        size_t slots = size_t(std::min<int64_t>(p.window, std::max<int64_t>(n_ops, 1)));
        anc.assign(slots, Ancestry{{0}, bits.words});
        reach.assign(bits.words, 0);
        direct_stamp.assign(slots, -1);
    }

    EdgeList edges;

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
    // n == 0 and left < 0: retire; n pieces: dense pieces; left >= 0: scratch[left] are the
    // cells left of a non-dense record; left == ERASE: the record's cells left lose the run
    // [erase_from, erase_to) of their positions (a dense write cuts one run of sorted cells)
    static constexpr int32_t ERASE = -2;
    struct Change { int32_t rid; int n; Piece p[2]; int32_t left; int64_t erase_from, erase_to; };
    struct Pending { int32_t group, row; bool is_read; Box box; };

    const Rows& R;
    int64_t n_ops;
    std::vector<Memory> mem;
    std::vector<Record> records;
    Params P;
    Callbacks& cb;
    Bits bits;
    // Op k's ancestors in the window (slot k % window): the words [0, tail.size() - 1) of
    // the set as stored, every bit from word `ones` up, none between (set_ancestors). In a
    // program whose ops mostly depend on their predecessors (a training step), an op has
    // every op of the window as an ancestor but the nearest hundred or so: the run of ones
    // is not stored, and the window's sets take a few words each instead of window / 8
    // bytes (2 MiB in all). `tail` ends with one zero word past the set's own:
    // Bits::or_shifted reads it.
    struct Ancestry {
        std::vector<uint64_t> tail;
        int ones;
    };
    std::vector<Ancestry> anc;
    std::vector<uint64_t> reach;
    int reach_len = 0;
    // the step at which each op of the window (slot op % window) last had a conflict: read
    // only for ops within the window, so older ops need no slot
    std::vector<int64_t> direct_stamp;
    std::vector<int32_t> cand;
    std::vector<std::vector<int64_t>> lefts, scratch;  // records' cells left; this write's
    std::vector<int32_t> free_lefts;
    std::vector<int64_t> new_cells;
    int64_t new_cells_view = -1;
    std::vector<Found> found, kept;
    std::vector<Pending> pending;
    std::vector<Change> changed;

    // a new live record in `index`: the next seq, a retired record's slot if there is one
    // (records alive at once, not records ever made, set the memory)
    std::vector<int32_t> free_records;
    int64_t next_seq = 0;
    int32_t add_record(ExtentIndex& index, Record rec) {
        rec.seq = next_seq++;
        int32_t id;
        if (free_records.empty()) {
            id = int32_t(records.size());
            records.push_back(rec);
        } else {
            id = free_records.back();
            free_records.pop_back();
            records[size_t(id)] = rec;
        }
        index.add(id, rec.seq, rec.low, rec.high, rec.box);
        return id;
    }

    Ancestry& ancestors(int64_t op) { return anc[size_t(op % P.window)]; }
    // op (k - 1 - d) is an ancestor of op k, with a = ancestors(k) and 0 <= d < window
    static bool has_ancestor(const Ancestry& a, int64_t d) {
        int64_t w = d >> 6;
        if (w >= a.ones) return true;
        return w < int64_t(a.tail.size()) - 1 && Bits::test(a.tail.data(), d);
    }
    void clear_reach() {
        std::fill(reach.begin(), reach.begin() + reach_len, 0);
        reach_len = 0;
    }
    // op j's ancestors are `reach` (its first `len` words; the rest are zero)
    void set_ancestors(int64_t j, int len) {
        Ancestry& a = ancestors(j);
        // The run of ones at the top. Bits d >= j stand for ops before op 0: no test asks
        // for them (every tested op is real), and shifting a set into a later op's frame
        // keeps them past op 0, so they count as ones here and the first window's sets
        // shrink too.
        int ones = bits.words;
        while (ones > 0) {
            int64_t w = ones - 1, first = w * 64;
            uint64_t full = w == bits.words - 1 ? bits.last_mask : ~uint64_t(0);
            uint64_t before_op0 = first >= j ? ~uint64_t(0)
                                  : j - first >= 64 ? 0 : ~uint64_t(0) << (j - first);
            uint64_t word = w < len ? reach[size_t(w)] : 0;
            if (((word | before_op0) & full) != full) break;
            --ones;
        }
        int stored = std::min(len, ones);
        // room for the closing zero first: a push_back past a full vector would double it
        a.tail.reserve(size_t(stored) + 1);
        a.tail.assign(reach.begin(), reach.begin() + stored);  // keeps its capacity
        a.tail.push_back(0);
        a.ones = ones;
    }

    afn::Layout row_layout(int64_t r) const {
        afn::Layout L;
        L.offset = R.offset(r);
        L.ndim = R.ndim(r);
        L.shape = R.shape_of(r);
        L.stride = R.stride_of(r);
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

    // a row's normal form, made on first use of its view (views are tested many times);
    // null when it does not fit the checked range (the Python path decides those)
    std::vector<int32_t> nf_index;  // view -> 1 + position in nf_pool; 0 not made; -1 overflow
    std::deque<afn::NormalForm> nf_pool;  // a deque: pointers stay valid as it grows
    const afn::NormalForm* normal_form(int64_t r) {
        if (nf_index.empty()) nf_index.assign(size_t(R.n_views()), 0);
        int32_t& k = nf_index[R.v(r)];
        if (k > 0) return &nf_pool[size_t(k - 1)];
        if (k < 0) return nullptr;
        afn::NormalForm nf;
        try {
            afn::normalise(row_layout(r), nf);
        } catch (afn::Overflow&) {
            k = -1;
            return nullptr;
        }
        nf_pool.push_back(std::move(nf));
        k = int32_t(nf_pool.size());
        return &nf_pool.back();
    }

    // the distinct cells of row r (at most covers_limit indices), made once while the
    // same view is asked in a row
    const std::vector<int64_t>& row_cells(int64_t r) {
        if (new_cells_view != int64_t(R.v(r))) {
            cells_of(row_layout(r), new_cells);
            new_cells_view = int64_t(R.v(r));
        }
        return new_cells;
    }

    // rows' (shape, stride) interned to small ids, made on first use
    struct DimsHash {
        size_t operator()(const std::vector<int64_t>& v) const {
            uint64_t h = 1469598103934665603ULL;
            for (int64_t x : v) h = (h ^ uint64_t(x)) * 1099511628211ULL;
            return size_t(h);
        }
    };
    std::unordered_map<std::vector<int64_t>, int32_t, DimsHash> shape_ids;
    std::vector<int32_t> view_shape;  // view -> 1 + id; 0 not made
    std::vector<int64_t> dims_key;
    int32_t shape_id(int64_t r) {
        if (view_shape.empty()) view_shape.assign(size_t(R.n_views()), 0);
        int32_t& id = view_shape[R.v(r)];
        if (id) return id - 1;
        dims_key.assign(R.shape_of(r), R.shape_of(r) + R.ndim(r));
        dims_key.insert(dims_key.end(), R.stride_of(r), R.stride_of(r) + R.ndim(r));
        auto it = shape_ids.emplace(dims_key, int32_t(shape_ids.size())).first;
        id = it->second + 1;
        return it->second;
    }
    // answers by (shape id, shape id, offset difference): open addressing, linear probing;
    // grows to PAIR_CACHE_LIMIT slots, then starts over empty
    struct PairCache {
        struct Slot { int32_t a = -1, b; int64_t delta; int answer; };
        std::vector<Slot> slots;
        size_t used = 0;
        static size_t hash(int32_t a, int32_t b, int64_t delta) {
            uint64_t h = uint64_t(uint32_t(a)) * 0x9E3779B97F4A7C15ULL ^
                         uint64_t(uint32_t(b)) * 0xC2B2AE3D27D4EB4FULL ^ uint64_t(delta);
            return size_t(h ^ (h >> 29)) * 0xBF58476D1CE4E5B9ULL >> 7;
        }
        Slot* find(int32_t a, int32_t b, int64_t delta) {
            if (slots.empty()) return nullptr;
            size_t mask = slots.size() - 1;
            for (size_t i = hash(a, b, delta) & mask;; i = (i + 1) & mask) {
                Slot& s = slots[i];
                if (s.a < 0) return nullptr;
                if (s.a == a && s.b == b && s.delta == delta) return &s;
            }
        }
        void put(int32_t a, int32_t b, int64_t delta, int answer) {
            if (2 * (used + 1) > slots.size()) {
                if (slots.size() >= PAIR_CACHE_LIMIT) {
                    std::fill(slots.begin(), slots.end(), Slot());
                    used = 0;
                } else {
                    std::vector<Slot> old(slots.empty() ? 1024 : 2 * slots.size());
                    old.swap(slots);
                    used = 0;
                    for (const Slot& s : old)
                        if (s.a >= 0) put(s.a, s.b, s.delta, s.answer);
                }
            }
            size_t mask = slots.size() - 1;
            size_t i = hash(a, b, delta) & mask;
            while (slots[i].a >= 0) i = (i + 1) & mask;
            slots[i] = Slot{a, b, delta, answer};
            ++used;
        }
    };
    static constexpr size_t PAIR_CACHE_LIMIT = size_t(1) << 20;  // 24 MiB at most
    PairCache pair_cache;

    bool meets(const Record& old, int64_t r, bool dense, bool& out) {
        if (dense && old.dense) {
            out = true;
            return true;
        }
        if (old.left >= 0) {  // only its cells not yet overwritten (_meets_left)
            const std::vector<int64_t>& left = lefts[size_t(old.left)];
            if (dense) {
                auto it = std::lower_bound(left.begin(), left.end(), R.low(r));
                out = it != left.end() && *it <= R.high(r);
                return true;
            }
            if (size_of(row_layout(r)) <= P.covers_limit) {
                const std::vector<int64_t>& cells = row_cells(r);
                out = false;
                if (cells.empty() || left.empty()) return true;  // (a zero-size table row)
                // each cell of the smaller set looked up in the other; or, where the access
                // spans far more than the record (a diagonal meets a row record in one
                // cell), each of its cells inside the record's extent in the record's
                auto a = cells.begin(), a_end = cells.end();
                auto b = left.begin(), b_end = left.end();
                // (extents from the row and the record: the sets' ends may be cache misses)
                if ((uint64_t(R.high(r)) - uint64_t(R.low(r))) / 4 >
                    uint64_t(old.high) - uint64_t(old.low)) {
                    a = std::lower_bound(a, a_end, old.low);
                    a_end = std::upper_bound(a, a_end, old.high);
                } else if (cells.size() > left.size()) {
                    std::swap(a, b);
                    std::swap(a_end, b_end);
                }
                for (; a != a_end && !out; ++a)
                    out = *a >= *b && *a <= *(b_end - 1) && std::binary_search(b, b_end, *a);
                return true;
            }
        }
        int64_t buf[2];
        afn::Layout a = rec_layout(old, buf), b = row_layout(r);
        int res = afn::UNDECIDED;
        if (old.piece) {
            if (const afn::NormalForm* nb = normal_form(r)) {
                try {
                    afn::NormalForm na;
                    afn::normalise(a, na);
                    res = afn::pair(na, *nb, afn::DEFAULT_BUDGET);
                } catch (afn::Overflow&) {
                }
            }
        } else {
            // footprints move with their extents: the answer for two shapes at one
            // difference of lows is the answer for every pair like them (asked first: a hit
            // needs neither normal form). A record's low is its row's unless cells left it.
            int32_t sa = shape_id(old.row), sb = shape_id(r);
            int64_t delta = R.low(r) - (old.left < 0 ? old.low : R.low(old.row));
            if (const PairCache::Slot* hit = pair_cache.find(sa, sb, delta)) {
                res = hit->answer;
            } else if (const afn::NormalForm* nb = normal_form(r)) {
                if (const afn::NormalForm* na = normal_form(old.row)) {
                    try {
                        res = afn::pair(*na, *nb, afn::DEFAULT_BUDGET);
                    } catch (afn::Overflow&) {
                    }
                    if (res == afn::YES || res == afn::NO) pair_cache.put(sa, sb, delta, res);
                }
            }
        }
        if (res == afn::YES || res == afn::NO) {
            out = res == afn::YES;
            return true;
        }
        return cb.intersects(a, b, out);
    }

    // solver.covers(new, old, covers_limit) for a non-dense new write: its rules here (radix.hpp)
    // but the last, enumerating old's cells, which goes to Python (the function the
    // reference calls)
    bool covers(int64_t r, const Record& old, bool& out) {
        int64_t buf[2];
        afn::Layout a = row_layout(r), b = rec_layout(old, buf);
        try {
            afn::Normal na, nb;
            afn::normalise(a, na);
            afn::normalise(b, nb);
            int c = afn::covers(na, nb);
            if (c == afn::YES || c == afn::NO) {
                out = c == afn::YES;
                return true;
            }
            // the cells of old's normal form (as covers counts them) past the limit: False
            afn::i128 cells = 1;  // stays at most the limit (below 2^63) times a size at most it
            for (int k = 0; k < nb.n && cells <= P.covers_limit; ++k)
                cells = nb.sizes[k] > P.covers_limit ? P.covers_limit + 1 : cells * nb.sizes[k];
            if (cells > P.covers_limit) {
                out = false;
                return true;
            }
        } catch (afn::Overflow&) {
        }
        return cb.covers(a, b, out);
    }

    // layout size (indices, with repeats), capped just above the limit
    int64_t size_of(const afn::Layout& L) const {
        __int128 n = 1;
        for (int k = 0; k < L.ndim; ++k) {
            n *= L.shape[k];
            if (n > P.covers_limit) return P.covers_limit + 1;
        }
        return int64_t(n);
    }
    // the distinct cells of a layout of at most covers_limit indices, ascending
    static void cells_of(const afn::Layout& L, std::vector<int64_t>& out) {
        // dims that move (size > 1, stride != 0), strides made positive (the offset moves to
        // the lowest cell), innermost (smallest stride) first
        struct Dim { int64_t n, s; };
        Dim d[afn::MAX_NDIM];
        int m = 0;
        int64_t base = L.offset;
        for (int k = 0; k < L.ndim; ++k) {
            int64_t n = L.shape[k], s = L.stride[k];
            if (n == 0) {
                out.clear();
                return;
            }
            if (n == 1 || s == 0) continue;
            if (s < 0) {
                base += s * (n - 1);
                s = -s;
            }
            d[m++] = Dim{n, s};
        }
        std::sort(d, d + m, [](const Dim& a, const Dim& b) { return a.s < b.s; });
        // Only the set of cells counts: a dim whose stride is k times the previous dim's,
        // with k at most that dim's size, adds to it a progression with no gaps, so the two
        // become one dim ({0..n-1} + k{0..n'-1} = {0..n-1 + k(n'-1)}, in steps of the smaller
        // stride). Overlapping windows (a convolution's patches, equal strides) lose their
        // repeated cells before they are made, and most then come out nested (no sort).
        int w = 0;
        for (int t = 0; t < m; ++t) {
            if (w > 0 && d[t].s % d[w - 1].s == 0 && d[t].s / d[w - 1].s <= d[w - 1].n) {
                d[w - 1].n += d[t].s / d[w - 1].s * (d[t].n - 1);
                continue;
            }
            d[w++] = d[t];
        }
        m = w;
        // nested: each stride passes the span of the dims inside it, so the cells come out
        // distinct and ascending with the largest stride outermost; else sort them
        auto nested_from = [&](int first) {
            int64_t span = 0;
            for (int t = first; t < m; ++t) {
                if (d[t].s <= span) return false;
                span += d[t].s * (d[t].n - 1);
            }
            return true;
        };
        auto expand = [&](int first, std::vector<int64_t>& cells) {
            cells.assign(1, base);
            for (int t = first; t < m; ++t) {
                size_t have = cells.size();
                int64_t n = d[t].n, s = d[t].s;
                cells.resize(have * size_t(n));
                for (int64_t i = n - 1; i >= 0; --i)
                    for (size_t c = 0; c < have; ++c) cells[size_t(i) * have + c] = cells[c] + i * s;
            }
        };
        if (nested_from(0)) {
            expand(0, out);
            return;
        }
        if (d[0].s == 1 && nested_from(1)) {
            // contiguous rows (overlapping windows): the row starts ascend, so the rows
            // merge into ascending distinct cells
            thread_local std::vector<int64_t> starts;
            expand(1, starts);
            out.clear();
            int64_t next = INT64_MIN;  // every cell below it is out already
            for (int64_t a : starts) {
                int64_t end = a + d[0].n;  // rows ascend: so do their ends
                for (int64_t c = std::max(a, next); c < end; ++c) out.push_back(c);
                next = end;
            }
            return;
        }
        expand(0, out);
        std::sort(out.begin(), out.end());
        out.erase(std::unique(out.begin(), out.end()), out.end());
    }

    // _subtract: old (non-dense) less the cells in [low, high] (subtract_run) or less the
    // sorted `cells` (subtract_cells); keep when none of its cells go
    // buffers they reuse: most calls change nothing and so allocate nothing
    std::vector<int64_t> fresh_cells, rest_cells;
    // old's cells not yet overwritten, or nullptr when it is too large to track
    const std::vector<int64_t>* cells_left(const Record& old) {
        if (old.left >= 0) return &lefts[size_t(old.left)];
        afn::Layout L = row_layout(old.row);
        if (size_of(L) > P.covers_limit) return nullptr;
        cells_of(L, fresh_cells);
        return &fresh_cells;
    }
    void subtract_run(const Record& old, int64_t low, int64_t high, Change& ch, bool& keep) {
        const std::vector<int64_t>* left = cells_left(old);
        keep = !left;
        if (keep) return;
        ch.n = 0;
        // the cells in [low, high] are one run of the sorted cells: found by bisection, and
        // a record already cut loses the run in place (no copy of the rest)
        auto from = std::lower_bound(left->begin(), left->end(), low);
        auto to = std::upper_bound(from, left->end(), high);
        keep = from == to;
        if (keep || to - from == int64_t(left->size())) return;  // nothing goes / all go
        if (old.left >= 0) {
            ch.left = ERASE;
            ch.erase_from = from - left->begin();
            ch.erase_to = to - left->begin();
            return;
        }
        ch.left = int32_t(scratch.size());
        scratch.emplace_back();
        std::vector<int64_t>& rest = scratch.back();
        rest.reserve(left->size() - size_t(to - from));
        rest.insert(rest.end(), left->begin(), from);
        rest.insert(rest.end(), to, left->end());
    }
    void subtract_cells(const Record& old, const std::vector<int64_t>& cells, Change& ch,
                        bool& keep) {
        const std::vector<int64_t>* left = cells_left(old);
        keep = !left || left->empty() || cells.empty();  // (empty: a zero-size table row)
        if (keep) return;
        ch.n = 0;
        // only cells inside both extents can go (a diagonal meets each row record in one
        // cell): both sorted sets are cut to them, then merged; the cells kept are copied
        // from the first that goes on (most calls change nothing and so copy nothing)
        auto c = std::lower_bound(cells.begin(), cells.end(), left->front());
        auto c_end = std::upper_bound(c, cells.end(), left->back());
        keep = c == c_end;
        if (keep) return;
        auto l = std::lower_bound(left->begin(), left->end(), *c);
        auto l_end = std::upper_bound(l, left->end(), *(c_end - 1));
        std::vector<int64_t>& rest = rest_cells;
        int64_t n_gone = 0, first = -1, last = -1;
        for (; l != l_end; ++l) {
            while (c != c_end && *c < *l) ++c;
            if (c == c_end) break;
            if (*c != *l) {
                if (n_gone) rest.push_back(*l);
                continue;
            }
            last = l - left->begin();
            if (!n_gone++) {
                first = last;
                rest.assign(left->begin(), l);
            }
        }
        keep = n_gone == 0;
        if (keep || n_gone == int64_t(left->size())) return;  // nothing goes / all go
        if (old.left >= 0 && last - first + 1 == n_gone) {
            ch.left = ERASE;  // one run of the cells left: erased in place
            ch.erase_from = first;
            ch.erase_to = last + 1;
            return;
        }
        rest.insert(rest.end(), l, left->end());
        ch.left = int32_t(scratch.size());
        scratch.push_back(rest);
    }

    // _remainder: keep (leave the record as it is), or the change to make
    bool remainder(int64_t r, bool dense, int64_t low, int64_t high, const Record& old,
                   Change& ch, bool& keep) {
        keep = false;
        ch.n = 0;
        ch.left = -1;
        if (dense) {
            if (low <= old.low && old.high <= high) return true;
            if (!old.dense) {
                subtract_run(old, low, high, ch, keep);
                return true;
            }
            if (old.low < low) ch.p[ch.n++] = Piece{old.low, low - 1};
            if (high < old.high) ch.p[ch.n++] = Piece{high + 1, old.high};
            return true;
        }
        // A write of few cells: its cells decide, as solver.covers would (a record retires
        // exactly when none of its cells are left, so the outcome is the reference's).
        int64_t buf[2];
        if (same_layout(row_layout(r), rec_layout(old, buf))) return true;
        if (size_of(row_layout(r)) <= P.covers_limit) {
            const std::vector<int64_t>& cells = row_cells(r);
            if (old.dense) {  // covered when every cell of [low, high] is one of them
                auto a = std::lower_bound(cells.begin(), cells.end(), old.low);
                auto b = std::upper_bound(a, cells.end(), old.high);
                keep = (b - a) != old.high - old.low + 1;
                // else, not a piece: its row's cells are its extent, and what is left of
                // them makes it non-dense (records.remainder)
                if (keep && !old.piece) subtract_cells(old, cells, ch, keep);
                return true;
            }
            if (old.left >= 0 || size_of(row_layout(old.row)) <= P.covers_limit) {
                subtract_cells(old, cells, ch, keep);
                return true;
            }
        }
        bool c;
        if (!covers(r, old, c)) return false;
        if (c) return true;
        if (old.dense || size_of(row_layout(r)) > P.covers_limit) {
            keep = true;
            return true;
        }
        subtract_cells(old, row_cells(r), ch, keep);
        return true;
    }

    // While op j's accesses are scanned, `reach` holds the ancestors of the sources of the
    // conflicts found so far (the sources themselves only as one another's ancestors).
    void add_ancestors_of(int64_t i, int64_t d) {
        // reach |= ancestors[i] << (d + 1)
        const Ancestry& a = ancestors(i);
        int len = bits.or_shifted(reach.data(), a.tail.data(), int(a.tail.size()) - 1, d + 1);
        if (a.ones < bits.words)
            len = std::max(len, bits.fill_from(reach.data(), int64_t(a.ones) * 64 + d + 1));
        if (len > reach_len) reach_len = len;
    }

    // A candidate of op i is implied for op j when i is already an ancestor through the
    // conflicts found so far and has no conflict of its own yet (dependencies._prune).
    bool implied(int64_t j, int64_t i) const {
        int64_t d = j - 1 - i;
        return d < P.window && Bits::test(reach.data(), d) &&
               direct_stamp[size_t(i % P.window)] != j;
    }
    void conflict(int64_t j, const Record& old, int kind, int64_t r) {
        found.push_back(Found{old.op, kind, old.row, int32_t(r)});
        int64_t d = j - 1 - old.op;
        if (d < P.window && direct_stamp[size_t(old.op % P.window)] != j) {
            direct_stamp[size_t(old.op % P.window)] = j;  // once per source
            // A source already in reach is an ancestor of a source added before, whose set
            // holds every ancestor of it in op j's window (the sets are closed under
            // ancestry within the window): its own set would add nothing.
            if (!Bits::test(reach.data(), d)) add_ancestors_of(old.op, d);
        }
    }

    bool step(int64_t j) {
        found.clear();
        pending.clear();
        clear_reach();
        const int64_t W = P.window;
        for (int64_t r = R.op_starts[j]; r < R.op_starts[j + 1]; ++r) {
            Memory& st = mem[size_t(R.group(r))];
            int64_t low = R.low(r), high = R.high(r);
            bool dense = R.dense(r);
            const Box box = box_of(R.offset(r), R.ndim(r), R.shape_of(r), R.stride_of(r),
                                   st.levels);
            if (R.mode[r] == READ) {
                bool skip_raw = P.prune & (1 << RAW);
                st.writes.query(low, high, box, cand);
                for (int32_t rid : cand) {
                    const Record& old = records[size_t(rid)];
                    if (skip_raw && implied(j, old.op)) continue;
                    bool hit;
                    if (!meets(old, r, dense, hit)) return false;
                    if (hit) conflict(j, old, RAW, r);
                }
                pending.push_back(Pending{R.group(r), int32_t(r), true, box});
                continue;
            }
            for (int which = 0; which < 2; ++which) {
                ExtentIndex& index = which == 0 ? st.reads : st.writes;
                int kind = which == 0 ? WAR : WAW;
                bool skip = P.prune & (1 << kind);
                changed.clear();
                scratch.clear();
                index.query(low, high, box, cand);
                for (int32_t rid : cand) {
                    const Record old = records[size_t(rid)];
                    Change ch;
                    ch.rid = rid;
                    bool keep;
                    if (skip && implied(j, old.op)) {
                        if (P.retire) {
                            if (dense) {
                                if (!remainder(r, dense, low, high, old, ch, keep)) return false;
                                if (!keep) changed.push_back(ch);
                            } else {
                                int64_t buf[2];
                                if (same_layout(rec_layout(old, buf), row_layout(r))) {
                                    ch.n = 0;
                                    ch.left = -1;
                                    changed.push_back(ch);
                                }
                            }
                        }
                        continue;
                    }
                    bool hit;
                    if (!meets(old, r, dense, hit)) return false;
                    if (hit) {
                        conflict(j, old, kind, r);
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
                    if (ch.left == ERASE) {  // a non-dense record already cut: one run goes
                        std::vector<int64_t>& cells = lefts[size_t(old.left)];
                        cells.erase(cells.begin() + ch.erase_from, cells.begin() + ch.erase_to);
                        int64_t ol = old.low, oh = old.high;
                        old.low = cells.front();
                        old.high = cells.back();
                        index.cut(ch.rid, old.seq, ol, oh, old.low, old.high, old.box);
                        continue;
                    }
                    if (ch.left >= 0) {  // fewer cells left (a dense record turns non-dense)
                        std::vector<int64_t>& cells = scratch[size_t(ch.left)];
                        int64_t ol = old.low, oh = old.high;
                        old.dense = false;
                        old.low = cells.front();
                        old.high = cells.back();
                        if (old.left < 0) {
                            if (free_lefts.empty()) {
                                old.left = int32_t(lefts.size());
                                lefts.emplace_back();
                            } else {
                                old.left = free_lefts.back();
                                free_lefts.pop_back();
                            }
                        }
                        lefts[size_t(old.left)].swap(cells);
                        index.cut(ch.rid, old.seq, ol, oh, old.low, old.high, old.box);
                        continue;
                    }
                    if (old.left >= 0) {  // its cells are replaced or it retires
                        std::vector<int64_t>().swap(lefts[size_t(old.left)]);
                        free_lefts.push_back(old.left);
                        old.left = -1;
                    }
                    if (ch.n == 0) {
                        old.alive = false;
                        index.remove(old.seq, old.low, old.high);
                        free_records.push_back(ch.rid);  // nothing refers to it any more
                        continue;
                    }
                    int64_t ol = old.low, oh = old.high;
                    Record base = old;
                    old.low = ch.p[0].low;
                    old.high = ch.p[0].high;
                    old.dense = true;
                    old.piece = true;
                    index.cut(ch.rid, old.seq, ol, oh, old.low, old.high, old.box);
                    for (int t = 1; t < ch.n; ++t) {
                        Record piece = base;
                        piece.low = ch.p[t].low;
                        piece.high = ch.p[t].high;
                        piece.dense = true;
                        piece.piece = true;
                        piece.alive = true;
                        add_record(index, piece);
                    }
                }
            }
            pending.push_back(Pending{R.group(r), int32_t(r), false, box});
        }
        if (P.prune) {
            if (!found.empty()) prune(j);
            else set_ancestors(j, 0);
        } else if (found.size() > 1) {
            sort_by_op(found, false);
        }
        // records of op j go in after all of its accesses (an op never depends on itself)
        bool replace_reads = P.retire && (P.prune & (1 << WAR));
        const Ancestry& mine = ancestors(j);
        bool have_reach = replace_reads && (mine.ones < bits.words ||
                                            Bits::any(mine.tail.data(), int(mine.tail.size())));
        for (const Pending& pd : pending) {
            Memory& st = mem[size_t(pd.group)];
            int64_t r = pd.row;
            Record rec{int32_t(j), int32_t(r), R.low(r), R.high(r), R.dense(r), false, true,
                       -1, pd.box};
            if (pd.is_read && rec.dense) {
                std::pair<int64_t, int64_t> key{rec.low, rec.high};
                auto it = st.last_read.find(key);
                if (have_reach && it != st.last_read.end()) {
                    Record& old = records[size_t(it->second)];
                    if (old.alive && old.low == rec.low && old.high == rec.high && old.dense) {
                        int64_t d = j - 1 - old.op;
                        if (0 <= d && d < W && has_ancestor(mine, d)) {
                            rec.seq = old.seq;  // takes the old record's place
                            old = rec;
                            continue;
                        }
                    }
                }
                st.last_read[key] = add_record(st.reads, rec);
                continue;
            }
            add_record(pd.is_read ? st.reads : st.writes, rec);
        }
        if (!found.empty()) {
            // pieces of one cut record meet the same access once each: keep the first
            kept.clear();
            for (const Found& f : found) {
                bool dup = false;
                for (const Found& x : kept) {
                    if (x.op == f.op && x.kind == f.kind && x.src_row == f.src_row &&
                        x.dst_row == f.dst_row) {
                        dup = true;
                        break;
                    }
                }
                if (!dup) {
                    kept.push_back(f);
                    edges.push_back(Edge{f.src_row, f.dst_row * 4 + f.kind});
                }
            }
        }
        return true;
    }

    // a stable sort by source op: a handful of conflicts per op, so insertion (no buffer
    // to allocate, as std::stable_sort's) unless there are many
    static void sort_by_op(std::vector<Found>& v, bool descending) {
        auto before = [descending](const Found& a, const Found& b) {
            return descending ? a.op > b.op : a.op < b.op;
        };
        if (v.size() > 32) {
            std::stable_sort(v.begin(), v.end(), before);
            return;
        }
        for (size_t i = 1; i < v.size(); ++i) {
            Found x = v[i];
            size_t k = i;
            for (; k > 0 && before(x, v[k - 1]); --k) v[k] = v[k - 1];
            v[k] = x;
        }
    }

    // The reference (dependencies._prune) walks the sources from the latest down and drops
    // an edge of a prunable kind whose source is an ancestor of the sources it kept. The
    // kept sources' ancestors are all the found sources' ancestors (a dropped source is an
    // ancestor of a kept one, and the window's sets are closed under ancestry), so `reach`
    // from the scan decides alike, and with the sources added it is op j's ancestor set.
    void prune(int64_t j) {
        sort_by_op(found, true);
        kept.clear();
        int64_t W = P.window;
        int32_t last_source = -1;  // found is sorted by op: sources form a run
        bool last_kept = false;
        for (const Found& f : found) {
            int64_t d = j - 1 - f.op;
            if (!(f.op == last_source && last_kept)) {
                last_source = f.op;
                last_kept = !((P.prune & (1 << f.kind)) && d < W && Bits::test(reach.data(), d));
                if (!last_kept) continue;
            }
            kept.push_back(f);
        }
        for (const Found& f : found) {
            int64_t d = j - 1 - f.op;
            if (d < W) reach_len = std::max(reach_len, Bits::set(reach.data(), d));
        }
        set_ancestors(j, reach_len);
        // kept is in descending op order: ascending, each op's run kept in its order
        std::reverse(kept.begin(), kept.end());
        for (auto run = kept.begin(); run != kept.end();) {
            auto end = run;
            while (end != kept.end() && end->op == run->op) ++end;
            std::reverse(run, end);
            run = end;
        }
        found.swap(kept);
    }
};

}  // namespace afw
