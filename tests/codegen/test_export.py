"""scaffold_task / export_dir: deterministic, atomic, refusing to overwrite, one failure never
stopping the others, and a report that is plain JSON."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from pypto_tui.errors import InputError
from pypto_tui.export import export_dir, scaffold_task, task_files

TESTS = Path(__file__).resolve().parent.parent
TASKS = TESTS / "fixtures" / "tasks"
GOLDEN = TESTS / "golden"


def test_scaffold_writes_the_golden_bytes(kb, tmp_path):
    out = tmp_path / "elu_kernel.py"
    r = scaffold_task(TASKS / "elu.py", kb, out)
    assert r.ok and r.output == str(out)
    assert (r.family, r.op, r.pattern, r.flavour) == ("elementwise", "elu", "A", "pypto-0.2.0")
    assert out.read_text() == (GOLDEN / "elu.py").read_text()
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed, not left behind


def test_scaffold_without_an_output_writes_nothing(kb, tmp_path):
    r = scaffold_task(TASKS / "softmax_rows.py", kb)
    assert r.ok and r.output is None and r.source.startswith('"""')


def test_scaffold_refuses_to_overwrite_without_force(kb, tmp_path):
    out = tmp_path / "k.py"
    out.write_text("mine\n")
    with pytest.raises(InputError, match="--force"):
        scaffold_task(TASKS / "elu.py", kb, out)
    assert out.read_text() == "mine\n"
    r = scaffold_task(TASKS / "elu.py", kb, out, force=True)
    assert r.ok and out.read_text() == (GOLDEN / "elu.py").read_text()


def test_scaffold_flavour(kb, tmp_path):
    r = scaffold_task(TASKS / "mse_loss.py", kb, tmp_path / "m.py", flavour="docs")
    assert r.flavour == "docs"
    assert (tmp_path / "m.py").read_text() == (GOLDEN / "docs" / "mse_loss.py").read_text()
    with pytest.raises(InputError, match="unknown flavour"):
        scaffold_task(TASKS / "mse_loss.py", kb, tmp_path / "n.py", flavour="nope")


def test_scaffold_bad_input(kb, tmp_path):
    with pytest.raises(InputError):
        scaffold_task(tmp_path / "missing.py", kb)
    with pytest.raises(InputError, match="task file itself"):
        scaffold_task(TASKS / "elu.py", kb, TASKS / "elu.py", force=True)


def _mixed_folder(tmp_path: Path) -> Path:
    src = tmp_path / "tasks"
    src.mkdir()
    for name in ("elu.py", "softmax_rows.py", "matmul_tall.py"):
        shutil.copy(TASKS / name, src / name)
    (src / "broken.py").write_text("def nope(:\n")
    (src / "conv.py").write_text(
        "import torch\nimport torch.nn as nn\n\n\nclass Model(nn.Module):\n    def __init__(self):\n"
        "        super().__init__()\n        self.conv = nn.Conv2d(3, 8, 3, padding=1, padding_mode='reflect')\n\n"
        "    def forward(self, x):\n"
        "        return self.conv(x)\n\n\ndef get_inputs():\n    return [torch.randn(2, 3, 16, 16)]\n\n\n"
        "def get_init_inputs():\n    return []\n")
    (src / "_helper.py").write_text("X = 1\n")
    return src


def test_export_reports_every_task_and_keeps_going(kb, tmp_path):
    src = _mixed_folder(tmp_path)
    out = tmp_path / "out"
    report = export_dir(src, out, kb)
    rows = {Path(r.task).stem: r for r in report.rows}
    assert list(rows) == ["broken", "conv", "elu", "matmul_tall", "softmax_rows"]  # sorted, _helper skipped
    assert rows["broken"].status == "error" and rows["broken"].reason
    assert rows["conv"].status == "unsupported" and "padding_mode" in rows["conv"].reason
    assert all(rows[t].status == "ok" for t in ("elu", "matmul_tall", "softmax_rows"))
    assert report.counts == {"ok": 3, "unsupported": 1, "error": 1}
    assert report.failed
    assert sorted(p.name for p in out.iterdir()) == ["elu.py", "matmul_tall.py", "softmax_rows.py"]
    assert (out / "matmul_tall.py").read_text() == (GOLDEN / "matmul_tall.py").read_text()
    data = json.loads(report.to_json())
    assert [t["status"] for t in data["tasks"]] == ["error", "unsupported", "ok", "ok", "ok"]
    assert {"task", "family", "status", "reason", "output", "seconds"} <= set(data["tasks"][0])


def test_export_again_refuses_existing_files_unless_forced(kb, tmp_path):
    src = _mixed_folder(tmp_path)
    out = tmp_path / "out"
    export_dir(src, out, kb)
    before = {p.name: p.read_bytes() for p in out.iterdir()}
    again = export_dir(src, out, kb)
    assert {Path(r.task).stem: r.status for r in again.rows}["elu"] == "error"
    assert "--force" in next(r.reason for r in again.rows if Path(r.task).stem == "elu")
    forced = export_dir(src, out, kb, force=True)
    assert forced.counts["ok"] == 3
    assert {p.name: p.read_bytes() for p in out.iterdir()} == before  # deterministic


def test_export_folder_checks(kb, tmp_path):
    with pytest.raises(InputError, match="not a folder"):
        export_dir(TASKS / "elu.py", tmp_path / "o", kb)
    with pytest.raises(InputError, match="tasks folder"):
        export_dir(TASKS, TASKS, kb)
    assert [p.name for p in task_files(TASKS)] == sorted(p.name for p in TASKS.glob("*.py"))


def test_export_all_fixtures(kb, tmp_path):
    report = export_dir(TASKS, tmp_path / "all", kb)
    assert report.counts == {"ok": 16, "unsupported": 0, "error": 0}
    for r in report.rows:
        assert Path(r.output).read_text() == (GOLDEN / Path(r.task).name).read_text()  # type: ignore[arg-type]
