"""``aliasflow.distributed``: the program as pure tasks on storage blocks, on Dask or Ray.

The same names as :mod:`aliasflow.execution.distributed`; the engines are imported only when
``DaskBackend`` or ``RayBackend`` is first used.
"""
from .execution.distributed import (Figures, LocalBackend, OpFailed, Plan, StorageInfo,  # noqa
                                    Task, parse_bytes, plan, run, run_local,
                                    run_plan)
from .execution.distributed import __all__, __getattr__  # noqa: F401
