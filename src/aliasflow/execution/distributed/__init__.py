"""Beyond one machine: a program as pure tasks on versioned storage blocks, run on Dask or Ray.

``plan(ops, block_bytes)`` functionalizes a program (engine-neutral records);
``DaskBackend`` and ``RayBackend`` execute a plan on a cluster; ``run`` (also reachable as
``aliasflow.run(ops, backend=..., block_bytes=...)``) executes and writes the final blocks back
into the storages. The engines are imported only when a backend is made.
"""
from .plan import Plan, Task, Figures, StorageInfo, parse_bytes, plan
from .execute import OpFailed
from .engine import LocalBackend, run, run_local, run_plan


def __getattr__(name):  # the backends import their engine lazily
    if name == "DaskBackend":
        from .dask_backend import DaskBackend
        return DaskBackend
    if name == "RayBackend":
        from .ray_backend import RayBackend
        return RayBackend
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Plan", "Task", "Figures", "StorageInfo", "parse_bytes", "plan",
           "OpFailed", "run_local", "run_plan", "DaskBackend", "RayBackend", "LocalBackend", "run"]
