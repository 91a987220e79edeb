"""The engine around the rules: parse errors, files, fixes, suppression, packs and flavours."""

from __future__ import annotations

import dataclasses
import textwrap
from pathlib import Path

import pytest

from pypto_tui.errors import InputError, TaskFileError
from pypto_tui.kb import get_kb
from pypto_tui.lint import CHECKS, RULES, fix_source, format_finding, lint_paths, lint_source
from pypto_tui.lint.base import LintFinding

KB = get_kb()

KERNEL = textwrap.dedent("""\
    import pypto as pt

    N = 16384


    @pt.frontend.jit
    def kernel(x: pt.Tensor((N,), pt.DT_FP32), out: pt.Tensor((N,), pt.DT_FP32)):
        pt.set_vec_tile_shapes(8192)
        out.move(1.0 - x)


    class ModelNew:  # a KernelBench module: the documents' style rules report here by default
        def forward(self, x):
            return x
    """)


def test_syntax_error_is_one_finding_not_a_traceback() -> None:
    findings = lint_source("def f(:\n    pass\n", "bad.py", KB)
    assert len(findings) == 1
    f = findings[0]
    assert (f.check, f.rule, f.level, f.path, f.line) == ("lint.parse", "syntax-error", "error", "bad.py", 1)
    assert format_finding(f).startswith("bad.py:1:")


def test_syntax_error_survives_fix_source() -> None:
    src = "x = (\n"
    new, findings = fix_source(src, KB)
    assert new == src and [f.check for f in findings] == ["lint.parse"]


def test_format_is_file_line_col_rule_message() -> None:
    (f,) = lint_source(KERNEL, "k.py", KB)
    assert format_finding(f) == f"k.py:9:14 P5.tensor-left {f.message}"
    assert f.to_dict()["check"] == "lint.scalar_left" and f.to_dict()["fixable"] is True


def test_import_aliases_are_followed_and_the_fix_uses_them() -> None:
    new, remaining = fix_source(KERNEL.replace("1.0 - x", "2.0 / x"), KB)
    assert "out.move(pt.reciprocal(x) * 2.0)" in new
    assert remaining == []


def test_fix_source_is_idempotent_on_every_example() -> None:
    for rule in RULES:
        for case in rule.INVALID:
            once, _ = fix_source(case.code, KB, flavour=case.flavour, task_source=case.task)
            twice, _ = fix_source(once, KB, flavour=case.flavour, task_source=case.task)
            assert twice == once, rule.CHECK


def test_fix_source_handles_nested_fixes_innermost_first() -> None:
    src = KERNEL.replace("out.move(1.0 - x)", "out.move(1.0 / (1.0 - -x))")
    new, remaining = fix_source(src, KB)
    assert "out.move(pt.reciprocal(x * (-1.0) * (-1.0) + 1.0))" in new
    assert remaining == []


def test_fix_leaves_other_findings() -> None:
    src = KERNEL.replace("out.move(1.0 - x)", "out.move(pt.maximum(0.0, 1.0 - x))")
    new, remaining = fix_source(src, KB)  # a KernelBench module hears the documents' P5 advice by default
    assert "pt.maximum(0.0, x * (-1.0) + 1.0)" in new
    assert [f.check for f in remaining] == ["lint.scalar_first_arg"]
    library = src.split("\n\nclass ModelNew")[0] + "\n"
    assert fix_source(library, KB) == (library, [])  # a library kernel: the style rules only with --strict


def test_suppression_comments() -> None:
    same_line = KERNEL.replace("out.move(1.0 - x)", "out.move(1.0 - x)  # pypto-lint: ignore[lint.scalar_left]")
    assert lint_source(same_line, kb=KB) == []
    by_rule = KERNEL.replace("out.move(1.0 - x)", "out.move(1.0 - x)  # pypto-lint: ignore[P5.tensor-left]")
    assert lint_source(by_rule, kb=KB) == []
    line_above = KERNEL.replace("    out.move(1.0 - x)", "    # pypto-lint: ignore\n    out.move(1.0 - x)")
    assert lint_source(line_above, kb=KB) == []
    other = KERNEL.replace("out.move(1.0 - x)", "out.move(1.0 - x)  # pypto-lint: ignore[lint.unary_minus]")
    assert [f.check for f in lint_source(other, kb=KB)] == ["lint.scalar_left"]
    # a silenced finding is not fixed either
    assert fix_source(same_line, KB)[0] == same_line


def test_checks_selection() -> None:
    assert lint_source(KERNEL, kb=KB, checks=["lint.unary_minus"]) == []
    assert len(lint_source(KERNEL, kb=KB, checks=["lint.scalar_left"])) == 1
    with pytest.raises(InputError, match="unknown check"):
        lint_source(KERNEL, kb=KB, checks=["lint.nope"])


def test_a_pack_without_the_rule_drops_its_findings() -> None:
    rules = {k: v for k, v in KB.rules.items() if k != "P5.tensor-left"}
    kb = dataclasses.replace(KB, rules=rules)
    assert lint_source(KERNEL, kb=kb) == []


def test_findings_carry_the_pack_severity_and_authority() -> None:
    src = KERNEL.replace("out.move(1.0 - x)", "out.move(x)\n    return out")
    (f,) = lint_source(src, kb=KB)
    assert (f.rule, f.level, f.authority) == ("V020.out-param", "error", "compiler")


def test_flavour_gates_the_020_rules() -> None:
    """A pack may describe a dialect whose kernels return their outputs; the output-parameter
    rules then stay silent. Both flavours of the default pack take output parameters, because
    0.2.0 refuses a return (probe return_in_kernel)."""
    src = KERNEL.replace("out.move(1.0 - x)", "out.move(x)\n    return out")
    returning = dataclasses.replace(KB.flavour("docs"), name="returning", out_param=False)
    kb = dataclasses.replace(KB, flavours={**KB.flavours, "returning": returning})
    assert lint_source(src, kb=kb, flavour="returning") == []
    assert {f.check for f in lint_source(src, kb=KB, flavour="docs")} == {"lint.return_in_kernel"}
    with pytest.raises(InputError):
        lint_source(src, kb=KB, flavour="no-such-flavour")


def test_task_file_errors_are_input_errors() -> None:
    with pytest.raises(TaskFileError, match="class Model"):
        lint_source(KERNEL, kb=KB, task_source="x = 1\n")
    with pytest.raises(TaskFileError, match="not valid Python"):
        lint_source(KERNEL, kb=KB, task_source="class Model(:\n")


def test_lint_paths_reads_files_and_folders(tmp_path: Path) -> None:
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "b.py").write_text(KERNEL, encoding="utf-8")
    (tmp_path / "pkg" / "a.py").write_text("x = 1\n", encoding="utf-8")
    (tmp_path / "bad.py").write_bytes(b"\xff\xfe\x00")
    findings = lint_paths([tmp_path / "pkg", tmp_path / "bad.py", tmp_path / "missing.py"], KB)
    assert [(Path(f.path).name, f.check) for f in findings] == [
        ("b.py", "lint.scalar_left"), ("bad.py", "lint.io"), ("missing.py", "lint.io"),
    ]


def test_a_crashing_rule_is_reported_and_the_others_still_run(monkeypatch: pytest.MonkeyPatch) -> None:
    rule = CHECKS["lint.unary_minus"]

    def boom(self, node):  # type: ignore[no-untyped-def]
        raise RuntimeError("boom")

    monkeypatch.setattr(rule, "_needs_parens", boom)
    src = KERNEL.replace("out.move(1.0 - x)", "out.move(-x + (1.0 - x))")
    checks = {f.check for f in lint_source(src, kb=KB)}
    assert checks == {"lint.internal", "lint.scalar_left"}


def test_rules_work_as_plain_libcst_visitors_too() -> None:
    """Batching is an optimisation: each rule is still an ordinary MetadataWrapper visitor."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper

    from pypto_tui.lint.analysis import ModuleInfo
    from pypto_tui.lint.base import LintContext

    wrapper = MetadataWrapper(cst.parse_module(KERNEL))
    ctx = LintContext("k.py", KB, KB.flavour(None), ModuleInfo(wrapper.module))
    rule = CHECKS["lint.scalar_left"](ctx)
    wrapper.visit(rule)
    assert [(f.line, f.col, f.rule) for f in rule.findings] == [(9, 14, "P5.tensor-left")]
    assert isinstance(rule.findings[0], LintFinding)


def test_every_lint_check_the_pack_names_exists() -> None:
    named = {c for r in KB.rules.values() for c in r.enforced_by if c.startswith("lint.")}
    assert named <= set(CHECKS)
    assert set(CHECKS) <= named, "every lint check is named by some rule's enforced_by"


def test_checks_match_the_catalogue() -> None:
    catalogue = pytest.importorskip("pypto_tui.catalogue")
    assert {c for c in catalogue.CHECK_NAMES if c.startswith("lint.")} == set(CHECKS)
    import pypto_tui.lint as lint

    assert lint.CHECKS is CHECKS and all(hasattr(r, "__cites__") for r in CHECKS.values())
