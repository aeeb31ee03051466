"""The threads and processes a program starts while a trace runs.

A dispatch mode is per thread: the trace does not see aten calls made on other threads. Each
thread started while a trace runs therefore runs under a counting mode (it counts the calls
and forwards each unchanged), so that the trace can say how many calls it did not see, and
says nothing about threads that make none (a multiprocessing queue's feeder threads, which
``DataLoader(num_workers=...)`` starts, only pickle). A child process forked while tracing
(DataLoader's workers) inherits the forking thread's dispatch mode: the traces stop there.
"""
from __future__ import annotations

import os
import threading

from torch.utils._python_dispatch import TorchDispatchMode

WATCHING: list = []      # traces running now, told about every thread started
THREAD_START = threading.Thread.start
_COUNT = threading.Lock()


class _Counting(TorchDispatchMode):
    """Counts a thread's aten calls into the traces that were running when it started."""

    def __init__(self, traces):
        super().__init__()
        self.traces = traces

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        with _COUNT:
            for trace in self.traces:
                if trace.running:
                    trace.calls_on_other_threads += 1
        return func(*args, **(kwargs or {}))


def _counting_start(self, *args, **kwargs):
    traces = list(WATCHING)
    for trace in traces:
        trace.threads_started += 1
    run = self.run

    def run_counted():
        with _Counting(traces):
            run()
    try:
        self.run = run_counted
    except AttributeError:   # a thread class that refuses the attribute: counted, not watched
        pass
    return THREAD_START(self, *args, **kwargs)


def watch_threads(trace) -> None:
    """Count the threads the program starts while ``trace`` runs, and their aten calls;
    starting a thread is otherwise unchanged."""
    WATCHING.append(trace)
    threading.Thread.start = _counting_start


def unwatch_threads(trace) -> None:
    if trace in WATCHING:
        WATCHING.remove(trace)
    if not WATCHING:
        threading.Thread.start = THREAD_START


def _in_forked_child() -> None:
    for trace in list(WATCHING):
        try:
            trace._forked()
        except Exception:  # noqa: BLE001 - never break the child
            pass
    WATCHING.clear()
    threading.Thread.start = THREAD_START


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_in_forked_child)
