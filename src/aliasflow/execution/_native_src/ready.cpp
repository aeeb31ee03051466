// aliasflow.execution._ready: the ready queue of a parallel run, in compiled code.
//
// The parallel runner's worker threads stay Python (they call each op's kernel, and NumPy
// releases the GIL inside its kernels); only the bookkeeping between ops lives here: unmet
// predecessor counts, successor lists (CSR arrays), the ready ops (a min-heap, so ready ops
// come out in program order), the first failed position, and the counts the calling thread
// watches.  The reference implementation, with the same interface and answers, is the
// pure-Python ``aliasflow.execution.ready.PyReadyQueue``.  It takes integers only: op
// positions, the successor arrays, the light flags, timeouts.
//
// Locking: every piece of state is guarded by one std::mutex, never by the GIL.  A call that
// finds work (or has nothing to wait for) keeps the GIL throughout: releasing and retaking it
// would hand it to another thread and start a convoy.  Only a call that must wait releases the
// GIL, and *then* takes the mutex; a thread holding the mutex never asks for the GIL, so the
// two locks cannot deadlock.  Every wait is bounded by the caller's timeout, so Python gets
// control back to look at errors, signals and Ctrl-C.
//
// Boundary rules (as in aliasflow.solver._native): the edge arrays are exact tuples of exact
// ints or contiguous 1-d int64 buffers (copied at construction, so later changes to them do
// not matter); indices are exact ints; timeouts exact floats or ints.  Every value is checked
// and refused with a TypeError/ValueError naming it; nothing from Python is trusted inside.
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <new>
#include <vector>

#include "../../_native_src/boundary.hpp"

namespace {

constexpr double MAX_TIMEOUT = 3600.0;  // a bounded wait: Python looks again at least this often

enum State : unsigned char { WAITING, READY, RUNNING, DONE, FAILED };

// A min-heap of op positions (lowest program position on top).
struct Heap {
    std::vector<int64_t> v;
    bool empty() const { return v.empty(); }
    int64_t top() const { return v.front(); }
    void push(int64_t k) {
        v.push_back(k);  // capacity reserved for every op: never reallocates
        std::push_heap(v.begin(), v.end(), std::greater<int64_t>());
    }
    int64_t pop() {
        std::pop_heap(v.begin(), v.end(), std::greater<int64_t>());
        int64_t k = v.back();
        v.pop_back();
        return k;
    }
};

// Light ops (the caller marks them: small kernels that hold the GIL throughout) run one at a
// time: a second thread running them would only wait for the GIL, and each GIL hand-over
// between two threads costs more than a small op (much more when other processes keep the
// cores busy).  So a worker that finds only light ops ready while another light op runs
// waits (without the GIL) for a heavy op, and the light ops stream through one thread.
struct Core {
    int64_t n = 0;
    std::vector<int64_t> offsets;  // successors of op k: targets[offsets[k]..offsets[k+1])
    std::vector<int64_t> targets;
    std::vector<int64_t> unmet;    // predecessors not finished yet
    std::vector<unsigned char> state, light;
    Heap ready_light, ready_heavy;
    int64_t limit = 0;             // ops at or past this position never start (first failure)
    int64_t running = 0, light_running = 0, finished = 0, failed = 0;
    bool stopped = false;
    int64_t worker_waiters = 0, progress_waiters = 0;
    std::mutex m;
    std::condition_variable work_cv, main_cv;

    bool heavy_startable() const { return !ready_heavy.empty() && ready_heavy.top() < limit; }
    bool light_startable() const { return !ready_light.empty() && ready_light.top() < limit; }
    // a worker asking now would get an op
    bool takeable() const {
        return heavy_startable() || (light_startable() && light_running == 0);
    }
    // nothing runs and nothing can start: no op will ever start or finish again
    bool over() const {
        return running == 0 && (stopped || (!heavy_startable() && !light_startable()));
    }
    void make_ready(int64_t t) {
        state[size_t(t)] = READY;
        (light[size_t(t)] ? ready_light : ready_heavy).push(t);
    }
    // -1: over (or stopped); -2: nothing to start now; else the op to run.  Mutex held.
    // The lowest startable position, except that a light op waits while another one runs.
    int64_t take() {
        if (stopped) return -1;
        bool l = light_startable() && light_running == 0, h = heavy_startable();
        int64_t k;
        if (l && (!h || ready_light.top() < ready_heavy.top())) {
            k = ready_light.pop();
            ++light_running;
        } else if (h) {
            k = ready_heavy.pop();
        } else {
            return running == 0 ? -1 : -2;
        }
        state[size_t(k)] = RUNNING;
        ++running;
        return k;
    }
    void finish(int64_t k) {
        --running;
        if (light[size_t(k)]) --light_running;
    }
};

struct QueueObject {
    PyObject_HEAD
    Core* core;
};

// ---- argument readers --------------------------------------------------------------------

// An exact bytes object of n bytes, each 0 or 1.
bool read_flags(PyObject* o, std::vector<unsigned char>& out, const char* what) {
    if (!PyBytes_CheckExact(o)) {
        PyErr_Format(PyExc_TypeError, "%s must be bytes (one 0 or 1 per op), got %.100s", what,
                     Py_TYPE(o)->tp_name);
        return false;
    }
    if (PyBytes_GET_SIZE(o) != Py_ssize_t(out.size())) {
        PyErr_Format(PyExc_ValueError, "%s has %zd bytes for %zu ops", what, PyBytes_GET_SIZE(o),
                     out.size());
        return false;
    }
    const unsigned char* p = reinterpret_cast<const unsigned char*>(PyBytes_AS_STRING(o));
    for (size_t j = 0; j < out.size(); ++j) {
        if (p[j] > 1) {
            PyErr_Format(PyExc_ValueError, "%s[%zu] = %d: must be 0 or 1", what, j, int(p[j]));
            return false;
        }
        out[j] = p[j];
    }
    return true;
}

bool read_index(PyObject* o, const Core& c, int64_t& k) {
    if (!PyLong_CheckExact(o)) {
        PyErr_Format(PyExc_TypeError, "op index must be an int, got %.100s", Py_TYPE(o)->tp_name);
        return false;
    }
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) return false;
    if (overflow || v < 0 || v >= c.n) {
        PyErr_Format(PyExc_ValueError, "op index %R out of range 0..%lld", o,
                     (long long)(c.n - 1));
        return false;
    }
    k = int64_t(v);
    return true;
}

bool read_timeout(PyObject* o, double& t) {
    if (PyFloat_CheckExact(o)) {
        t = PyFloat_AS_DOUBLE(o);
    } else if (PyLong_CheckExact(o)) {
        int overflow = 0;
        long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
        if (v == -1 && PyErr_Occurred()) return false;
        t = overflow ? HUGE_VAL : double(v);
    } else {
        PyErr_Format(PyExc_TypeError, "timeout must be a float or int, got %.100s",
                     Py_TYPE(o)->tp_name);
        return false;
    }
    if (!(t >= 0.0 && t <= MAX_TIMEOUT)) {  // also refuses NaN
        PyErr_Format(PyExc_ValueError, "timeout must be between 0 and %g seconds, got %R",
                     MAX_TIMEOUT, o);
        return false;
    }
    return true;
}

bool check_nargs(const char* name, Py_ssize_t nargs, Py_ssize_t want) {
    if (nargs == want) return true;
    PyErr_Format(PyExc_TypeError, "%s takes %zd argument(s), got %zd", name, want, nargs);
    return false;
}

std::chrono::nanoseconds as_duration(double seconds) {
    return std::chrono::nanoseconds(int64_t(seconds * 1e9));
}

// ---- the type ----------------------------------------------------------------------------

PyObject* queue_new(PyTypeObject* type, PyObject* args, PyObject* kwds) {
    if (kwds && PyDict_GET_SIZE(kwds)) {
        PyErr_SetString(PyExc_TypeError, "ReadyQueue(offsets, targets) takes no keywords");
        return nullptr;
    }
    Py_ssize_t nargs = PyTuple_GET_SIZE(args);
    if (nargs != 2 && nargs != 3) {
        PyErr_Format(PyExc_TypeError, "ReadyQueue(offsets, targets[, light]) takes 2 or 3 "
                     "arguments, got %zd", nargs);
        return nullptr;
    }
    Core* c = new (std::nothrow) Core;
    if (!c) return PyErr_NoMemory();
    try {
        if (!afpy::read_int64_array(PyTuple_GET_ITEM(args, 0), c->offsets, "offsets") ||
            !afpy::read_int64_array(PyTuple_GET_ITEM(args, 1), c->targets, "targets")) {
            delete c;
            return nullptr;
        }
        const auto& off = c->offsets;
        const auto& tg = c->targets;
        if (off.empty() || off[0] != 0) {
            PyErr_SetString(PyExc_ValueError, "offsets must start with 0 (and have n+1 entries)");
            delete c;
            return nullptr;
        }
        int64_t n = int64_t(off.size()) - 1;
        for (int64_t k = 0; k < n; ++k)
            if (off[size_t(k + 1)] < off[size_t(k)]) {
                PyErr_Format(PyExc_ValueError, "offsets must not decrease: offsets[%lld] = %lld "
                             "< offsets[%lld] = %lld", (long long)(k + 1),
                             (long long)off[size_t(k + 1)], (long long)k, (long long)off[size_t(k)]);
                delete c;
                return nullptr;
            }
        if (off[size_t(n)] != int64_t(tg.size())) {
            PyErr_Format(PyExc_ValueError, "offsets[-1] = %lld but there are %zu targets",
                         (long long)off[size_t(n)], tg.size());
            delete c;
            return nullptr;
        }
        c->n = n;
        c->unmet.assign(size_t(n), 0);
        for (int64_t k = 0; k < n; ++k)
            for (int64_t j = off[size_t(k)]; j < off[size_t(k + 1)]; ++j) {
                int64_t t = tg[size_t(j)];
                // a successor comes later in program order: so the graph has no cycle and
                // every op becomes ready once its predecessors are done
                if (t <= k || t >= n) {
                    PyErr_Format(PyExc_ValueError, "targets[%lld] = %lld: a successor of op %lld "
                                 "must be in %lld..%lld", (long long)j, (long long)t, (long long)k,
                                 (long long)(k + 1), (long long)(n - 1));
                    delete c;
                    return nullptr;
                }
                ++c->unmet[size_t(t)];
            }
        c->light.assign(size_t(n), 0);
        // light=None is no flags, as in the reference (PyReadyQueue)
        if (nargs == 3 && PyTuple_GET_ITEM(args, 2) != Py_None &&
            !read_flags(PyTuple_GET_ITEM(args, 2), c->light, "light")) {
            delete c;
            return nullptr;
        }
        c->state.assign(size_t(n), WAITING);
        c->ready_light.v.reserve(size_t(n));
        c->ready_heavy.v.reserve(size_t(n));
        for (int64_t k = 0; k < n; ++k)
            if (!c->unmet[size_t(k)]) c->make_ready(k);
        c->limit = n;
    } catch (const std::bad_alloc&) {
        delete c;
        return PyErr_NoMemory();
    }
    QueueObject* self = reinterpret_cast<QueueObject*>(type->tp_alloc(type, 0));
    if (!self) {
        delete c;
        return nullptr;
    }
    self->core = c;
    return reinterpret_cast<PyObject*>(self);
}

void queue_dealloc(PyObject* o) {
    QueueObject* self = reinterpret_cast<QueueObject*>(o);
    delete self->core;  // no thread can be inside a method: each call holds a reference
    PyTypeObject* type = Py_TYPE(o);
    type->tp_free(o);
    Py_DECREF(type);  // instances of a heap type own a reference to it
}

Core& core_of(PyObject* self) { return *reinterpret_cast<QueueObject*>(self)->core; }

PyObject* q_next(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    if (!check_nargs("next(timeout)", nargs, 1)) return nullptr;
    double timeout;
    if (!read_timeout(args[0], timeout)) return nullptr;
    Core& c = core_of(self);
    int64_t k;
    bool wake;
    {
        std::lock_guard<std::mutex> lock(c.m);  // uncontended: only GIL-free waiters hold it
        k = c.take();
        // this thread took a heavy op while a light one can start: a waiting worker runs it
        wake = k >= 0 && c.worker_waiters && c.light_running == 0 && c.light_startable();
    }
    if (wake) c.work_cv.notify_one();
    if (k != -2 || timeout == 0.0) return PyLong_FromLongLong(k);
    Py_BEGIN_ALLOW_THREADS
    {
        std::unique_lock<std::mutex> lock(c.m);
        ++c.worker_waiters;
        c.work_cv.wait_for(lock, as_duration(timeout),
                           [&c] { return c.stopped || c.takeable() || c.running == 0; });
        --c.worker_waiters;
        k = c.take();
        wake = k >= 0 && c.worker_waiters && c.light_running == 0 && c.light_startable();
    }
    if (wake) c.work_cv.notify_one();
    Py_END_ALLOW_THREADS
    return PyLong_FromLongLong(k);
}

PyObject* state_error(const Core& c, int64_t k, const char* what) {
    static const char* names[] = {"waiting", "ready", "running", "done", "failed"};
    PyErr_Format(PyExc_ValueError, "%s(%lld): op %lld is %s, not running", what, (long long)k,
                 (long long)k, names[c.state[size_t(k)]]);
    return nullptr;
}

PyObject* q_done(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    if (!check_nargs("done(k)", nargs, 1)) return nullptr;
    Core& c = core_of(self);
    int64_t k;
    if (!read_index(args[0], c, k)) return nullptr;
    int64_t fresh = 0, waiters, progress;
    bool over;
    {
        std::lock_guard<std::mutex> lock(c.m);
        if (c.state[size_t(k)] != RUNNING) return state_error(c, k, "done");
        c.state[size_t(k)] = DONE;
        c.finish(k);
        ++c.finished;
        for (int64_t j = c.offsets[size_t(k)]; j < c.offsets[size_t(k + 1)]; ++j) {
            int64_t t = c.targets[size_t(j)];
            if (--c.unmet[size_t(t)] == 0) {
                c.make_ready(t);
                if (!c.light[size_t(t)]) ++fresh;
            }
        }
        over = c.over();
        waiters = c.worker_waiters;
        progress = c.progress_waiters;
    }
    // Wake only who has something to do: a waiting worker per new heavy op, everyone at the
    // end.  Not for light ops: this thread comes back for the next one itself (it holds the
    // GIL; a woken thread would first have to take the GIL from it).
    if (over) {
        c.work_cv.notify_all();
        c.main_cv.notify_all();
    } else {
        if (waiters && fresh == 1) c.work_cv.notify_one();
        else if (waiters && fresh > 1) c.work_cv.notify_all();
        if (progress) c.main_cv.notify_all();
    }
    Py_RETURN_NONE;
}

PyObject* q_fail(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    if (!check_nargs("fail(k)", nargs, 1)) return nullptr;
    Core& c = core_of(self);
    int64_t k;
    if (!read_index(args[0], c, k)) return nullptr;
    {
        std::lock_guard<std::mutex> lock(c.m);
        if (c.state[size_t(k)] != RUNNING) return state_error(c, k, "fail");
        c.state[size_t(k)] = FAILED;
        c.finish(k);
        ++c.failed;
        c.limit = std::min(c.limit, k);
    }
    c.work_cv.notify_all();  // rare: waiters look again (the run may be over now)
    c.main_cv.notify_all();
    Py_RETURN_NONE;
}

PyObject* q_stop(PyObject* self, PyObject* const*, Py_ssize_t nargs) {
    if (!check_nargs("stop()", nargs, 0)) return nullptr;
    Core& c = core_of(self);
    {
        std::lock_guard<std::mutex> lock(c.m);
        c.stopped = true;
    }
    c.work_cv.notify_all();
    c.main_cv.notify_all();
    Py_RETURN_NONE;
}

// wait(seen, timeout) -> (finished count, over): returns once the run is over, or (with seen >= 0)
// once the finished count differs from `seen`, or after `timeout` seconds.
PyObject* q_wait(PyObject* self, PyObject* const* args, Py_ssize_t nargs) {
    if (!check_nargs("wait(seen, timeout)", nargs, 2)) return nullptr;
    Core& c = core_of(self);
    if (!PyLong_CheckExact(args[0])) {
        PyErr_Format(PyExc_TypeError, "seen must be an int, got %.100s", Py_TYPE(args[0])->tp_name);
        return nullptr;
    }
    int overflow = 0;
    long long seen = PyLong_AsLongLongAndOverflow(args[0], &overflow);
    if (seen == -1 && PyErr_Occurred()) return nullptr;
    if (overflow || seen < -1 || seen > c.n) {
        PyErr_Format(PyExc_ValueError, "seen must be -1 or a count in 0..%lld, got %R",
                     (long long)c.n, args[0]);
        return nullptr;
    }
    double timeout;
    if (!read_timeout(args[1], timeout)) return nullptr;
    const bool watch = seen >= 0;
    auto ready = [&c, watch, seen] { return c.over() || (watch && c.finished != seen); };
    int64_t finished;
    bool over;
    {
        std::lock_guard<std::mutex> lock(c.m);
        finished = c.finished;
        over = c.over();
        if (ready() || timeout == 0.0) return Py_BuildValue("(LO)", (long long)finished,
                                                            over ? Py_True : Py_False);
    }
    Py_BEGIN_ALLOW_THREADS
    {
        std::unique_lock<std::mutex> lock(c.m);
        if (watch) ++c.progress_waiters;
        c.main_cv.wait_for(lock, as_duration(timeout), ready);
        if (watch) --c.progress_waiters;
        finished = c.finished;
        over = c.over();
    }
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(LO)", (long long)finished, over ? Py_True : Py_False);
}

PyObject* q_finished_ops(PyObject* self, PyObject* const*, Py_ssize_t nargs) {
    if (!check_nargs("finished_ops()", nargs, 0)) return nullptr;
    Core& c = core_of(self);
    std::vector<int64_t> out;
    {
        std::lock_guard<std::mutex> lock(c.m);
        try {
            out.reserve(size_t(c.finished));
        } catch (const std::bad_alloc&) {
            return PyErr_NoMemory();
        }
        for (int64_t k = 0; k < c.n; ++k)
            if (c.state[size_t(k)] == DONE) out.push_back(k);
    }
    PyObject* list = PyList_New(Py_ssize_t(out.size()));
    if (!list) return nullptr;
    for (size_t j = 0; j < out.size(); ++j) {
        PyObject* v = PyLong_FromLongLong(out[j]);
        if (!v) {
            Py_DECREF(list);
            return nullptr;
        }
        PyList_SET_ITEM(list, Py_ssize_t(j), v);
    }
    return list;
}

PyObject* q_status(PyObject* self, PyObject* const*, Py_ssize_t nargs) {
    if (!check_nargs("status()", nargs, 0)) return nullptr;
    Core& c = core_of(self);
    std::lock_guard<std::mutex> lock(c.m);
    return Py_BuildValue("{s:L,s:L,s:L,s:L,s:L,s:O,s:O}", "n", (long long)c.n, "running",
                         (long long)c.running, "finished", (long long)c.finished, "failed",
                         (long long)c.failed, "ready",
                         (long long)(c.ready_light.v.size() + c.ready_heavy.v.size()), "stopped",
                         c.stopped ? Py_True : Py_False, "over", c.over() ? Py_True : Py_False);
}

#define FAST(f) reinterpret_cast<PyCFunction>(reinterpret_cast<void (*)(void)>(f))

PyMethodDef queue_methods[] = {
    {"next", FAST(q_next), METH_FASTCALL,
     "next(timeout) -> the lowest ready op's position (now running); -1 when the run is over "
     "or stopped; -2 when none became ready within timeout seconds (the GIL is released only "
     "while waiting)."},
    {"done", FAST(q_done), METH_FASTCALL,
     "done(k): running op k finished; successors whose predecessors are all done become ready."},
    {"fail", FAST(q_fail), METH_FASTCALL,
     "fail(k): running op k failed; no op at or past position k starts from now on."},
    {"stop", FAST(q_stop), METH_FASTCALL, "stop(): no op starts from now on."},
    {"wait", FAST(q_wait), METH_FASTCALL,
     "wait(seen, timeout) -> (finished count, over), once the run is over or (seen >= 0) the count "
     "differs from seen, or after timeout seconds (the GIL is released while waiting)."},
    {"finished_ops", FAST(q_finished_ops), METH_FASTCALL,
     "finished_ops() -> positions of the ops that finished without failing, ascending."},
    {"status", FAST(q_status), METH_FASTCALL,
     "status() -> dict of n, running, finished, failed, ready, stopped, over."},
    {nullptr, nullptr, 0, nullptr}};

PyType_Slot queue_slots[] = {
    {Py_tp_doc, const_cast<char*>(
        "ReadyQueue(offsets, targets[, light]): the successors of op k are "
        "targets[offsets[k]:offsets[k+1]], each later than k (exact tuples of ints or "
        "contiguous 1-d int64 arrays, copied); light: bytes, 1 for each op that holds the "
        "GIL throughout (light ops run one at a time).")},
    {Py_tp_new, reinterpret_cast<void*>(queue_new)},
    {Py_tp_dealloc, reinterpret_cast<void*>(queue_dealloc)},
    {Py_tp_methods, queue_methods},
    {0, nullptr}};

PyType_Spec queue_spec = {"aliasflow.execution._ready.ReadyQueue", sizeof(QueueObject), 0,
                          Py_TPFLAGS_DEFAULT, queue_slots};


PyMethodDef module_methods[] = {
    {nullptr, nullptr, 0, nullptr}};

PyModuleDef module = {PyModuleDef_HEAD_INIT, "aliasflow.execution._ready",
                      "Compiled ready queue of the parallel runner (see "
                      "aliasflow/execution/ready.py for the reference implementation).",
                      -1, module_methods, nullptr, nullptr, nullptr, nullptr};

}  // namespace

PyMODINIT_FUNC PyInit__ready(void) {
    PyObject* m = PyModule_Create(&module);
    if (!m) return nullptr;
    PyObject* type = PyType_FromSpec(&queue_spec);
    if (!type || PyModule_AddObject(m, "ReadyQueue", type) < 0) {
        Py_XDECREF(type);
        Py_DECREF(m);
        return nullptr;
    }
    return m;
}
