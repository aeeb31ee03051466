# The tracer's doctests need PyTorch; without it, pytest does not collect that package.
try:
    import torch  # noqa: F401
    collect_ignore = []
except ImportError:
    collect_ignore = ["torch_trace"]
