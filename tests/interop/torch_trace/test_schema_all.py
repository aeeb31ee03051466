"""The schema reader on every overload registered in ``torch.ops.aten``.

The oracle parses the schema's printed text (``str(op._schema)``, the native_functions.yaml
spelling: ``Tensor?``, ``Tensor[]``, ``Tensor?[]``, ``Tensor(a!)``, ``Tensor(a -> *)``) with
a small parser written here; the reader under test works from the schema's type objects
(which print as ``Optional[Tensor]``, ``List[Tensor]``, ``List[Optional[Tensor]]``).
"""
import re

import pytest

torch = pytest.importorskip("torch")

from aliasflow.interop.torch_trace import schema as S  # noqa: E402

ARG = re.compile(r"^(?P<type>[A-Za-z_\[\]?,. ]+?)(?P<alias>\([^)]*\))?(?P<list>\[\d*\])?"
                 r"(?P<opt>\?)?\s+(?P<name>\w+)(=.*)?$")


def split_top(text: str):
    """Split on commas not inside brackets or parentheses."""
    out, depth, cur = [], 0, ""
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "," and depth == 0:
            out.append(cur.strip())
            cur = ""
        else:
            cur += ch
    if cur.strip():
        out.append(cur.strip())
    return out


def parse(schema_text: str):
    """``[(name, kind, alias text, kwarg_only)]`` and the returns' alias texts."""
    inner = schema_text[schema_text.index("(") + 1:schema_text.rindex(") ->")]
    returns = schema_text[schema_text.rindex(") ->") + 4:].strip()
    args, kwarg_only = [], False
    for piece in split_top(inner):
        if piece == "*":
            kwarg_only = True
            continue
        m = ARG.match(piece)
        assert m, (schema_text, piece)
        base = m.group("type").strip()
        listy = m.group("list") is not None
        opt = m.group("opt") is not None
        if base in ("Tensor", "Tensor?"):
            kind = "list" if listy else "tensor"
        elif base.startswith(("Tensor[]", "Tensor?[]")):
            kind = "list"
        else:
            kind = "other"
        del opt
        args.append((m.group("name"), kind, m.group("alias") or "", kwarg_only))
    ret_aliases = re.findall(r"Tensor(\([^)]*\))", returns)
    return args, ret_aliases


OVERLOADS = S.all_aten_overloads()


def test_every_overload_is_read():
    assert len(OVERLOADS) > 2500
    problems = []
    for op in OVERLOADS:
        text = str(op._schema)
        try:
            spec = S.spec_of(op)
        except Exception as exc:  # noqa: BLE001
            problems.append(f"{text}: {exc}")
            continue
        args, ret_aliases = parse(text)
        assert [a[0] for a in args] == [a.name for a in spec.args], text
        view_returns = any("!" not in r for r in ret_aliases)
        for (name, kind, alias, kwarg_only), a in zip(args, spec.args):
            if a.holds != kind:
                problems.append(f"{text}: {name} holds {a.holds}, schema says {kind}")
                continue
            if kind == "other":
                assert a.mode is None
                continue
            written = "!" in alias or name in S.UNANNOTATED_WRITES.get(spec.base, (0, ()))[1]
            if written:
                want = {None} if spec.base in S.METADATA_ONLY else \
                    {"W"} if kwarg_only or spec.base in S.WRITE_ONLY else {"RW"}
                if kwarg_only:
                    assert a.is_out, text
            elif spec.base in S.NO_READ or spec.base in S.METADATA_ONLY:
                want = {None}
            elif alias and view_returns:
                want = {None}       # the op returns a view of it: no data touched
            else:
                want = {"R"}
            if a.mode not in want:
                problems.append(f"{text}: {name} mode {a.mode}, expected {want}")
        fresh = [r != "" for r in ret_aliases]
        del fresh
    assert problems == [], "\n".join(problems[:40])


def test_list_and_optional_spellings():
    aten = torch.ops.aten
    split = S.spec_of(aten.split.Tensor)
    assert split.view_only and split.returns == ("list",) and split.fresh == (False,)
    assert S.spec_of(aten.unbind.int).view_only
    idx = S.spec_of(aten.index_put_.default)
    assert [(a.name, a.holds) for a in idx.args][:3] == [
        ("self", "tensor"), ("indices", "list"), ("values", "tensor")]
    ln = S.spec_of(aten.native_layer_norm.default)
    assert {a.name: a.mode for a in ln.args if a.holds != "other"} == {
        "input": "R", "weight": "R", "bias": "R"}
    fe = S.spec_of(aten._foreach_add_.List)
    assert fe.foreach and fe.writes and [a.mode for a in fe.args][:2] == ["RW", "R"]
    amm = S.spec_of(aten.aminmax.out)
    assert [(a.name, a.mode, a.is_out) for a in amm.args if a.holds != "other"] == [
        ("self", "R", False), ("min", "W", True), ("max", "W", True)]
    # a list return inside a tuple, and ``Tensor(a!)[]`` mutated lists
    amp = S.spec_of(aten._amp_foreach_non_finite_check_and_unscale_.default)
    assert [a.mode for a in amp.args] == ["RW", "RW", "R"]


def test_tracing_a_call_of_every_kind_of_return():
    import aliasflow as af
    x = torch.arange(12.).reshape(3, 4)
    with af.trace() as tr:
        parts = x.split(2, dim=1)                       # Tensor(a)[]
        tops = torch.topk(x, 2)                          # (Tensor, Tensor) fresh
        mm = torch.aminmax(x, dim=0)                     # named tuple
        u = torch.unique_consecutive(x, return_counts=True)
        s = [p.sum() for p in parts]
    assert len(parts) == 2 and len(tops) == 2 and len(mm) == 2 and len(u) == 2 and len(s) == 2
    assert not any(c.untracked for c in tr.calls)
    fresh = [s for i in (tr.info(k) for k in range(len(tr))) for s in i.slots if s.fresh]
    assert len(fresh) >= 6
