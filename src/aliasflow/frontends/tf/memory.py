"""TensorFlow's C++ tensor memory model (seed 002)."""
__all__: list[str] = []
