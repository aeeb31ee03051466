"""Bridges to real array libraries: NumPy, DLPack, PyTorch."""
