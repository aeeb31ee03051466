"""``from aliasflow import mge``: MegEngine-style eager tensors (see :mod:`aliasflow.frontends.mge`)."""
from .frontends.mge import *  # noqa: F401,F403
from .frontends.mge import __all__, functional  # noqa: F401
