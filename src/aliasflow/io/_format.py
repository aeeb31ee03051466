"""Program-file constants and the error every refused file raises."""
from __future__ import annotations

from collections.abc import Mapping

from ..core.errors import AliasflowError
from ..core.primitives import PRIMITIVES

FORMAT = "aliasflow-program"
VERSION = 1
SUPPORTED_VERSIONS = (1,)
MAX_FILE_BYTES = 256 * 2**20
MAX_TENSOR_BYTES = 2**32
MAX_TOTAL_BYTES = 2**32  # all of a file's tensors together (overridable: max_total_bytes=)
MAX_DIMS = 32
MAX_PROBLEMS = 200  # reported in full; beyond this, a count
_INT64 = (-2**63, 2**63 - 1)

DERIVATIONS = ("index", "transpose", "reshape", "broadcast_to", "as_strided")


class _KindParams(Mapping):
    """kind -> {param: type}, read live from the one registry of op kinds."""

    def __getitem__(self, kind):
        return PRIMITIVES[kind].params

    def __iter__(self):
        return iter(PRIMITIVES)

    def __len__(self) -> int:
        return len(PRIMITIVES)


KIND_PARAMS = _KindParams()
_KEY_HINTS = {k: (" (a derived view takes its tensor from \"of\"; for an explicit window use "
                  "\"tensor\", or derive one with \"as_strided\")")
              for k in ("tensor", "offset", "shape", "stride")}


class ProgramFileError(AliasflowError):
    """A program file (or a program to save) that aliasflow refuses.

    ``problems`` lists every problem found, each starting with its JSON path; ``source`` is the
    file name (or ``"<string>"``).
    """

    def __init__(self, problems, source: str = "<string>"):
        self.problems = list(problems)
        self.source = source
        shown = self.problems[:MAX_PROBLEMS]
        more = len(self.problems) - len(shown)
        if len(self.problems) == 1:
            text = f"{source}: {shown[0]}"
        else:
            text = f"{source}: {len(self.problems)} problems:\n" + "\n".join(
                f"  {p}" for p in shown)
            if more:
                text += f"\n  ... and {more} more"
        super().__init__(text)
