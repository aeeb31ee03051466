"""Run analysis tests on both dependency walks: the compiled one and the Python reference.

``from walker_backends import walker_backend`` in a test module makes every test in it run
twice (as ``solver_backends`` does for the solver).
"""

from aliasflow.analysis import compiled

from backends import backend_fixture

walker_backend = backend_fixture(compiled, "walker", "compiled")
