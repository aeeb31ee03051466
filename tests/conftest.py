"""Tests are laid out by package (``tests/core`` tests ``aliasflow.core``, and so on). This
directory is on ``sys.path`` (pytest puts a rootdir conftest's directory there), so the shared
helpers beside this file (``strategies``, ``backends``, ``repo``, ...) import by name from any
subdirectory."""
