"""Templates are data in the pack: filling them with nodes, and where they are looked up."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import libcst as cst
import pytest

from pypto_tui.codegen.templates import fill_expression, fill_module, fill_statements, find_template, template_dirs
from pypto_tui.errors import InputError
from pypto_tui.kb import bundled_pack_dir, load_pack

TESTS = Path(__file__).resolve().parent.parent
TASKS = TESTS / "fixtures" / "tasks"


def _code(stmts: list[cst.BaseStatement]) -> str:
    return cst.Module(body=stmts).code  # type: ignore[arg-type]


def test_statement_lists_replace_a_placeholder_line():
    a = cst.parse_statement("a = 1\n")
    b = cst.parse_statement("b = 2\n")
    out = fill_statements("for i in range(3):\n    {body}\nend = {value}\n", body=[a, b], value=cst.Integer("7"))
    assert _code(out) == "for i in range(3):\n    a = 1\n    b = 2\nend = 7\n"


def test_an_empty_statement_list_leaves_pass_in_an_emptied_block():
    out = fill_statements("if TAIL > 0:\n    {tail}\nx = 1\n", tail=[])
    assert _code(out) == "if TAIL > 0:\n    pass\nx = 1\n"


def test_argument_lists_expand_in_calls():
    e = fill_expression("kernel({args})", args=[cst.Arg(cst.Name("a")), cst.Arg(cst.Name("out"))])
    assert cst.Module([]).code_for_node(e) == "kernel(a, out)"


def test_unused_placeholders_are_ignored():
    # a pack's template may leave a placeholder out (the docs flavour has no `device`)
    out = fill_module("{out} = {kernel}()\n", out=cst.Name("o"), kernel=cst.Name("k"), device=cst.Name("d"))
    assert out.code == "o = k()\n"


def test_doc_lines_are_dropped(kb):
    t = find_template(kb, "pypto-0.2.0", "write")
    assert not t.text.startswith("##")
    assert t.text.strip() == "{dst}.move({value})"


def test_lookup_order_flavour_then_common_then_bundled(kb_minimal, kb):
    bundled = bundled_pack_dir() / "templates"
    mine = Path(kb_minimal.path) / "templates"
    assert template_dirs(kb_minimal, "docs") == [mine / "docs", mine / "common", bundled / "docs", bundled / "common",
                                                 mine / "pypto-0.2.0", bundled / "pypto-0.2.0"]
    assert template_dirs(kb, "pypto-0.2.0") == [bundled / "pypto-0.2.0", bundled / "common"]


def test_a_missing_template_is_an_input_error(kb):
    with pytest.raises(InputError, match="no kernel template 'nope.py.tmpl'"):
        find_template(kb, "pypto-0.2.0", "nope")


def _pack(tmp_path: Path, write: str | None) -> Path:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "pack.toml").write_text(
        '[pack]\nname = "override"\nversion = "0.1"\nschema = 1\nextends = "default"\n', encoding="utf-8")
    if write is not None:
        d = pack / "templates" / "pypto-0.2.0"
        d.mkdir(parents=True)
        (d / "write.py.tmpl").write_text(write, encoding="utf-8")
    return pack


def test_a_pack_without_templates_uses_the_bundled_ones(tmp_path, fresh):

    from pypto_tui.design import Design, Pipeline, kernel_of

    kb2 = load_pack(_pack(tmp_path, None))
    g = kernel_of(Pipeline(kb2, Design(task=str(TASKS / "elu.py"))))
    assert g.supported
    assert g.source.replace("'override' 0.1", "'default' 1.0") == fresh("elu").source


def test_a_pack_can_override_one_template(tmp_path):

    from pypto_tui.design import Design, Pipeline, kernel_of

    kb2 = load_pack(_pack(tmp_path, "## whole-tensor writes with a slice\n{dst}[:] = {value}\n"))
    g = kernel_of(Pipeline(kb2, Design(task=str(TASKS / "elu.py"))))
    assert "out[:] = pypto.maximum(x, 0.0)" in g.source
    assert "def create_elu_kernel(flat_size, alpha):" in g.source  # the rest still from the default


def test_the_bundled_templates_parse():
    """With every `{placeholder}` read as a name, each template is Python."""
    templates = sorted((bundled_pack_dir() / "templates").rglob("*.py.tmpl"))
    assert len(templates) >= 10  # the default pack's kernel texts are there to check
    for p in templates:
        text = "".join(line for line in p.read_text().splitlines(keepends=True) if not line.startswith("##"))
        module = cst.parse_module(re.sub(r"\{([A-Za-z_]\w*)\}", r"__p_\1", text))
        assert module.body, p.name


def test_template_files_are_copyable(tmp_path):
    # a user starts a pack by copying the bundled templates: they are plain files
    dst = tmp_path / "templates"
    shutil.copytree(bundled_pack_dir() / "templates", dst)
    assert (dst / "common" / "loop.py.tmpl").is_file()


def test_a_new_flavour_borrows_the_bundled_templates_of_its_style(tmp_path, fresh):

    from pypto_tui.design import Design, Pipeline, kernel_of

    pack = tmp_path / "next"
    pack.mkdir()
    (pack / "pack.toml").write_text(
        '[pack]\nname = "next"\nversion = "0.1"\nschema = 1\nextends = "default"\ndefault_flavour = "pypto-next"\n\n'
        '[[flavour]]\nname = "pypto-next"\ndescription = "a later release, same output style"\nout_param = true\n',
        encoding="utf-8")
    kb2 = load_pack(pack)
    assert template_dirs(kb2, "pypto-next")[-1] == bundled_pack_dir() / "templates" / "pypto-0.2.0"
    g = kernel_of(Pipeline(kb2, Design(task=str(TASKS / "elu.py"))))
    assert g.supported and g.flavour == "pypto-next"
    assert "out.move(" in g.source
