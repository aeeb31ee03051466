"""Backends by name, for the command line: connect to a cluster, or start a local one."""
from __future__ import annotations

from contextlib import contextmanager

from ...core.errors import AliasflowError

BACKENDS = ("dask", "ray", "local")


@contextmanager
def open_backend(name: str, address: str | None = None, workers: int = 2,
                 timeout: float | None = None):
    """Yield a backend; a cluster this starts (loopback, ``workers`` worker processes) is shut
    down on exit, one it connects to (``address``) is left running."""
    if name not in BACKENDS:
        raise AliasflowError(f"backend must be one of {', '.join(BACKENDS)}, got {name!r}")
    if name == "local":
        if address is not None:
            raise AliasflowError("backend 'local' runs in this process and takes no address")
        from .engine import LocalBackend
        yield LocalBackend()
        return
    if name == "ray":
        try:
            from .ray_backend import RayBackend
            backend = RayBackend(address=address, num_cpus=workers, timeout=timeout)
        except ImportError as exc:
            raise AliasflowError(f"backend 'ray' needs Ray: pip install 'aliasflow[ray]' "
                                 f"({exc})") from None
        try:
            yield backend
        finally:
            backend.close()
        return
    try:
        from distributed import Client, LocalCluster
    except ImportError as exc:
        raise AliasflowError(f"backend 'dask' needs dask.distributed: pip install "
                             f"'aliasflow[dask]' ({exc})") from None
    from .dask_backend import DaskBackend
    if address is not None:
        with Client(address, timeout=30) as client:
            yield DaskBackend(client, timeout=timeout)
        return
    with LocalCluster(host="127.0.0.1", dashboard_address=None, n_workers=workers,
                      threads_per_worker=1, processes=True) as cluster, Client(cluster) as client:
        yield DaskBackend(client, timeout=timeout)
