"""The version, in one place: the package, ``aliasflow --version`` and the build
(``[tool.setuptools.dynamic]`` in pyproject.toml) all read it here."""
__version__ = "0.1.0"

