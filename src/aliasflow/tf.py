"""``from aliasflow import tf``: TensorFlow in aliasflow (see :mod:`aliasflow.frontends.tf`)."""
from .frontends.tf import *  # noqa: F401,F403
from .frontends.tf import __all__  # noqa: F401
