"""Run solver tests on both backends: the compiled core and the pure-Python reference.

``from solver_backends import backend`` in a test module makes every test in it run twice.
"""

from aliasflow.solver import api

from backends import backend_fixture

backend = backend_fixture(api, "_native", "native")
