"""`export` and `lint` over every fixture of issue 11's families, as a user would run them: each
task is scaffolded (status ok) and its module is lint-clean."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from typer.testing import CliRunner

from pypto_tui.cli import app

EXTRA = Path(__file__).resolve().parents[1] / "fixtures" / "tasks_extra"
FIXTURES = [
    "cumsum_reverse_last", "cumsum_exclusive_dim0", "cumsum_masked_big", "cumprod_zeros_dim0", "cumsum_dim",
    "cumsum_dim0", "argmin_last_odd", "argmax_mid_keepdim", "argmax_dim0_indices", "argmax_neg",
    "cross_entropy_7_classes", "cross_entropy_randint", "gelu_exact_3d", "gelu_fp16", "huber_delta_module",
    "smooth_l1_beta", "hinge_broadcast_3d", "hinge_randint", "l1_normalize_3d", "l2_norm_eps_rows",
    "triu_matmul_odd_diag", "tril_matmul_rect", "diag_matmul_rows_odd", "matmul_diag_cols", "matmul_3d_2d",
    "matmul_3d_2d_odd", "einsum_4d_transposed", "matvec_long_k", "sdpa_odd_len", "sdpa_cross_fp16",
    "matmul_irregular_odd", "bmm_wide_batch", "group_norm_six_groups",  # the three that did not verify
]
runner = CliRunner()


def test_export_scaffolds_every_issue11_fixture_lint_clean(tmp_path):
    tasks = tmp_path / "tasks"
    tasks.mkdir()
    for name in FIXTURES:
        shutil.copy(EXTRA / f"{name}.py", tasks / f"{name}.py")
    out = tmp_path / "out"
    r = runner.invoke(app, ["export", str(tasks), "-o", str(out), "--json"])
    assert r.exit_code == 0, r.stdout + r.stderr
    rows = json.loads(r.stdout)["tasks"]
    assert len(rows) == len(FIXTURES)
    assert [Path(row["task"]).stem for row in rows if row["status"] != "ok"] == []
    r = runner.invoke(app, ["lint", *sorted(str(p) for p in out.glob("*.py"))])
    assert r.exit_code == 0, r.stdout
    assert f"clean: {len(FIXTURES)} file(s), no findings" in r.stdout + r.stderr
