"""The exceptions aliasflow raises for bad input and failed execution."""


class AliasflowError(ValueError):
    """Invalid input: a view, op, program file or argument that aliasflow refuses.

    Raised before anything is modified; the message names the bad thing and its value.
    """


class ExportRefused(AliasflowError, BufferError):
    """A view that DLPack cannot export, or export arguments it cannot honour: bad input (an
    :class:`AliasflowError`) and the ``BufferError`` DLPack consumers expect."""


class ExecutionError(RuntimeError):
    """An operation failed while running; the original exception is chained as ``__cause__``."""

    def __init__(self, op_name: str, message: str):
        super().__init__(f"op {op_name!r} failed: {message}")
        self.op_name = op_name
