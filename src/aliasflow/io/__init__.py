"""Program files: load and save aliasflow programs as JSON (see :mod:`aliasflow.io.program`)."""
from .program import (FORMAT, MAX_FILE_BYTES, SUPPORTED_VERSIONS, VERSION, ProgramFileError,
                      dumps_program, load_program, loads_program, save_program)

__all__ = ["load_program", "loads_program", "save_program", "dumps_program", "ProgramFileError",
           "FORMAT", "VERSION", "SUPPORTED_VERSIONS", "MAX_FILE_BYTES"]
