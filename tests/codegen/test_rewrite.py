"""codegen.rewrite: the rewrites module composition and template filling run without libcst's visitor
protocol give what a libcst transformer gives (the same code, byte for byte) on generated kernels, leave
untouched subtrees as the same objects, and splice and drop sequence elements as libcst does."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest

from pypto_tui.codegen.builder import _ExpandWrite, name
from pypto_tui.codegen.rewrite import code_of, holders, hooks_of, renamed, transform, walk
from pypto_tui.codegen.templates import fill_statements
from pypto_tui.design import Design, Pipeline, kernel_of

FIX = Path(__file__).resolve().parents[1] / "fixtures"


class _Suffix(cst.CSTTransformer):
    """The libcst way: every Name in `names` renamed."""

    def __init__(self, names: dict[str, str]) -> None:
        self.names = names

    def leave_Name(self, original: cst.Name, updated: cst.Name) -> cst.Name:
        new = self.names.get(updated.value)
        return updated.with_changes(value=new) if new else updated


@pytest.fixture(scope="module")
def module(kb) -> cst.Module:
    k = kernel_of(Pipeline(kb, Design(task=str(FIX / "tasks_chain" / "swiglu.py"))))
    assert k.supported and isinstance(k.tree, cst.Module), k.reason
    return k.tree


def _top_names(m: cst.Module) -> dict[str, str]:
    names = {}
    for s in m.body:
        if isinstance(s, cst.FunctionDef | cst.ClassDef):
            names[s.name.value] = s.name.value + "_K7"
        elif isinstance(s, cst.SimpleStatementLine) and isinstance(s.body[0], cst.Assign):
            target = s.body[0].targets[0].target
            if isinstance(target, cst.Name):
                names[target.value] = target.value + "_K7"
    return names


def test_renaming_gives_the_transformers_code_and_keeps_untouched_subtrees(module) -> None:
    names = _top_names(module)
    assert len(names) >= 4, names
    ours, theirs = renamed(module, names), module.visit(_Suffix(names))
    assert ours.code == theirs.code and ours.code != module.code
    # a statement that names none of them is the same object, not a copy
    untouched = [s for s in module.body if not any(isinstance(n, cst.Name) and n.value in names for n in walk(s))]
    assert untouched and all(any(t is u for t in ours.body) for u in untouched)
    assert renamed(module, {}) is module


def test_sequence_elements_are_spliced_and_dropped_as_libcst_does() -> None:
    tree = cst.parse_module("f(a, b, c)\nkeep()\ndrop()\n")

    class Edit(cst.CSTTransformer):
        def leave_Arg(self, original: cst.Arg, updated: cst.Arg):  # b -> b1, b2; c removed
            if isinstance(updated.value, cst.Name) and updated.value.value == "b":
                return cst.FlattenSentinel([cst.Arg(cst.Name("b1"), comma=updated.comma), cst.Arg(cst.Name("b2"),
                                                                                                   comma=updated.comma)])
            if isinstance(updated.value, cst.Name) and updated.value.value == "c":
                return cst.RemoveFromParent()
            return updated

        def leave_SimpleStatementLine(self, original, updated):
            call = updated.body[0].value
            return cst.RemoveFromParent() if isinstance(call, cst.Call) and call.func.value == "drop" else updated

    assert transform(tree, hooks_of(Edit())).code == tree.visit(Edit()).code == "f(a, b1, b2, )\nkeep()\n"


def test_a_whole_replacement_is_not_walked_inside() -> None:
    tree = cst.parse_expression("g(h(x), y)")
    seen: list[str] = []

    def whole(n: cst.CSTNode):
        if isinstance(n, cst.Name):
            seen.append(n.value)
        return cst.Name("z") if isinstance(n, cst.Call) and getattr(n.func, "value", "") == "h" else None

    out = transform(tree, {}, whole)
    assert cst.Module([]).code_for_node(out) == "g(z, y)" and "x" not in seen


def test_walk_gives_parents_first_and_skips_what_enter_refuses() -> None:
    tree = cst.parse_expression("a + f(b, c)")
    names = [n.value for n in walk(tree) if isinstance(n, cst.Name)]
    assert names == ["a", "f", "b", "c"]
    inside = [n.value for n in walk(tree, lambda n: not isinstance(n, cst.Call)) if isinstance(n, cst.Name)]
    assert inside == ["a"]


def test_code_of_writes_what_libcst_writes(module) -> None:
    """The position-free code generation gives libcst's text for a whole module, for a node inside it,
    and in a module whose newline and indent are not the defaults."""
    assert code_of(module, module) == module.code
    factory = next(s for s in module.body if isinstance(s, cst.FunctionDef))
    assert code_of(factory) == cst.Module([]).code_for_node(factory)
    odd = cst.parse_module("def f(x):\r\n\tif x:\r\n\t\treturn (x + 1) * 2\r\n")
    assert code_of(odd, odd) == odd.code == "def f(x):\r\n\tif x:\r\n\t\treturn (x + 1) * 2\r\n"


def test_holders_are_the_nodes_over_a_match_and_nothing_else() -> None:
    tree = cst.parse_expression("g(h(x), k(y))")
    held = holders(tree, lambda n: isinstance(n, cst.Name) and n.value == "x")
    call = tree.args[0].value
    assert {id(tree), id(tree.args[0]), id(call), id(call.args[0]), id(call.args[0].value)} == held
    assert id(tree.args[1].value) not in held and holders(tree, lambda n: False) == frozenset()


def test_a_filled_template_keeps_its_unmarked_lines_and_expands_every_write() -> None:
    """The fill walks only what holds a placeholder (and, with WRITE, each line): a line without one is
    the parsed template's own object in every fill, and WRITE is expanded wherever it stands."""
    text = "pypto.set_vec_tile_shapes(8, 128)\nWRITE({out}, {v})\ny = pypto.exp({v})\n"
    one = fill_statements(text, None, out=name("a"), v=name("b"))
    two = fill_statements(text, None, out=name("c"), v=name("d"))
    assert one[0] is two[0] and one[1] is not two[1]
    assert [cst.Module([]).code_for_node(s).strip() for s in two[1:]] == ["WRITE(c, d)", "y = pypto.exp(d)"]
    out = fill_statements(text, _ExpandWrite("pypto.assemble({value}, [0, 0], {dst})"), out=name("o"), v=name("x"))
    assert [cst.Module([]).code_for_node(s).strip() for s in out] == [
        "pypto.set_vec_tile_shapes(8, 128)", "pypto.assemble(x, [0, 0], o)", "y = pypto.exp(x)"]
