"""``from aliasflow import te``: TVM's tensor expressions in aliasflow (see
:mod:`aliasflow.frontends.te`)."""
from .frontends.te import *  # noqa: F401,F403
from .frontends.te import __all__  # noqa: F401
