"""The source text findings quote: every node's text cut from the cached line offsets equals
what :func:`ast.get_source_segment` gives, and each line's statement is the innermost simple
statement spanning it (oracle: a walk of the whole tree for that line)."""
import ast
import inspect
import linecache

import pytest

import aliasflow.interop.findings.source as source


def _files():
    import json, textwrap, torch.nn.modules.conv as conv, numpy.lib._function_base_impl as fb
    return [json.__file__, textwrap.__file__, conv.__file__, fb.__file__, source.__file__,
            inspect.__file__]


def _oracle_statement(tree, line):
    best = None
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and node.lineno <= line <= node.end_lineno \
                and not isinstance(node, source._SKIPPED):
            if best is None or node.lineno >= best.lineno:
                best = node
    return best


def _where(node):
    return None if node is None else (type(node), node.lineno, node.col_offset,
                                      node.end_lineno, node.end_col_offset)


@pytest.mark.parametrize("path", _files())
def test_segments_and_statements_agree_with_ast(path):
    text = "".join(linecache.getlines(path))
    tree = ast.parse(text)
    parsed = source._parsed(path)
    nodes = [node for node in ast.walk(tree) if getattr(node, "end_col_offset", None) is not None]
    assert len(nodes) > 100
    # ast.get_source_segment splits the whole text on every call: about a hundred nodes per file
    for node in nodes[::max(1, len(nodes) // 100)]:
        assert parsed.segment(node) == ast.get_source_segment(text, node), (path, node.lineno)
    lines = len(linecache.getlines(path))
    for line in range(1, lines + 1, max(1, lines // 25)):
        assert _where(parsed.statement.get(line)) == _where(_oracle_statement(tree, line))


def test_non_ascii_and_multiline(tmp_path):
    p = tmp_path / "m.py"
    p.write_text("é = [1,\n     2]  # ü\nx['ß'] += f(é,\n  y=ü)\n", encoding="utf-8")
    a = source.assignment(str(p), 4)
    assert (a.target, a.value, a.op, a.subscript) == ("x['ß']", "f(é,\n  y=ü)", "+", True)
    (c,) = source.calls(str(p), 3)
    assert (c.function, c.receiver, c.args, c.kwargs) == ("f", None, ("é",), {"y": "ü"})


def test_operators_outermost_first_with_literals_marked(tmp_path):
    p = tmp_path / "o.py"
    p.write_text("loss = a * c\ny = 2 * x * x\nz = (u @ v) - -1\n")
    assert [(o.op, o.left, o.right, o.literal) for o in source.operators(str(p), 1)] == \
        [("*", "a", "c", False)]
    assert [(o.op, o.left, o.right, o.literal) for o in source.operators(str(p), 2)] == \
        [("*", "2 * x", "x", False), ("*", "2", "x", True)]
    assert [(o.op, o.left, o.right, o.literal) for o in source.operators(str(p), 3)] == \
        [("-", "u @ v", "-1", True), ("@", "u", "v", False)]
