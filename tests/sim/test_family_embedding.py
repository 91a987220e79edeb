"""Embeddings (TAKE.index-select): nn.Embedding, F.embedding and `table[index]` read as one registry kind
by both front ends, scaffolded as pypto.index_select of the table's rows, and verified through the real
compiler: a level-1 task, a token embedding before a layer norm, and a Swin-style bias table indexed by a
constant buffer (traced); a twin that picks the next row fails."""

from __future__ import annotations

import json

import numpy as np
import pytest
from family import EXTRA, pipe
from typer.testing import CliRunner

from pypto_tui.cli import app
from pypto_tui.design import Design, Pipeline, kernel_of, task_kernels
from pypto_tui.dims import plan_dims
from pypto_tui.lint.engine import lint_source
from pypto_tui.ops import registry
from pypto_tui.sim import jobs as J
from pypto_tui.sim.verification import verify_many

TASK = "embedding.py"
TRACED = EXTRA.parent / "tasks_traced"


def test_the_registry_kind_picks_rows_by_index_for_every_spelling():
    k = registry.kind("embedding")
    assert k is not None and registry.by_module("Embedding") is k
    assert registry.by_aten("aten.embedding.default") is k and registry.by_aten("aten.index.Tensor") is k
    table = np.arange(12, dtype=np.float32).reshape(4, 3)
    index = np.array([[3, 0], [1, 1]])
    assert np.array_equal(k.reference(index, table), table[index])
    assert k.shape([(2, 2), (4, 3)], {}) == (2, 2, 3)
    assert k.shape([(5, 7)], {"num_embeddings": 10, "embedding_dim": 16}) == (5, 7, 16)


def test_the_functional_spelling_reads_the_same_kind_and_refuses_a_float_index(kb, tmp_path):
    task = tmp_path / "f.py"
    task.write_text("import torch\nimport torch.nn as nn\nimport torch.nn.functional as F\n\n\n"
                    "class Model(nn.Module):\n    def forward(self, idx, table):\n"
                    "        return F.embedding(idx, table)\n\n\n"
                    "def get_inputs():\n    return [torch.randint(0, 500, (6, 30)), torch.randn(500, 64)]\n\n\n"
                    "def get_init_inputs():\n    return []\n")
    c = Pipeline(kb, Design(task=str(task))).contract()
    assert (c.op, c.supported, c.output_shape) == ("embedding", True, (6, 30, 64)), c.reason
    task.write_text(task.read_text().replace("torch.randint(0, 500, (6, 30))", "torch.rand(6, 30)"))
    bad = Pipeline(kb, Design(task=str(task))).contract()
    assert not bad.supported and "torch takes int64 positions" in bad.reason


def test_the_index_is_flattened_and_the_table_laid_out_as_rows(kb):
    p = pipe(kb, TASK)
    found = task_kernels(p)
    assert found.supported and [k.ops for k in found.kernels] == ["embedding"], found.reason
    c = found.kernels[0].pipeline.contract()
    assert (c.op, c.output_shape) == ("embedding", (4, 40, 256)) and "emb_weight[idx]" in (c.formula or "")
    plan = plan_dims(c, kb)
    assert plan.reshape == "take_rows" and plan.kernel_shapes == [(160,), (1000, 256)]
    assert plan.output_kernel_shape == (160, 256)


def test_the_scaffold_takes_rows_with_index_select_and_is_lint_clean(kb):
    p = pipe(kb, TASK)
    k = kernel_of(p)
    assert k.supported, k.reason
    assert "idx: pypto.Tensor((n,), pypto.DT_INT64)" in k.source
    assert "emb_weight: pypto.Tensor((rows, width), pypto.DT_FP32)" in k.source  # the table's dtype, not the index's
    assert "pypto.index_select(emb_weight, 0, idx_all)" in k.source
    assert "return out.reshape(idx.shape[0], idx.shape[1], emb_weight.shape[1])" in k.source
    assert lint_source(k.source, "k.py", kb=kb, task_signature=p.contract().signature) == []


def test_a_large_index_loops_over_chunks_of_positions(kb, tmp_path):
    task = tmp_path / "tokens.py"
    task.write_text((EXTRA / TASK).read_text().replace("batch_size = 4", "batch_size = 512")
                    .replace("seq_len = 40", "seq_len = 2048"))
    k = kernel_of(Pipeline(kb, Design(task=str(task))))
    assert k.supported, k.reason
    assert "idx_chunk = pypto.view(idx, [BASIC_BATCH], [off])" in k.source
    assert "pypto.assemble(pypto.index_select(emb_weight, 0, idx_chunk), [off, 0], out)" in k.source


def test_the_traced_bias_table_reads_table_index_as_an_embedding(cache):
    r = CliRunner().invoke(app, ["contract", str(TRACED / "bias_table.py"), "--front-end", "traced", "--json"])
    doc = json.loads(r.stdout)
    assert doc["supported"], doc["reason"]
    assert [k["ops"] for k in doc["kernels"]] == ["embedding", "add"]


@pytest.mark.sim
def test_an_embedding_verifies_exactly_and_a_twin_taking_the_next_row_fails(kb, broken_twins):
    (r,) = verify_many([pipe(kb, TASK)], jobs=1, cache=False)
    assert r.supported and r.passed and r.max_abs_err == 0, r.reason
    (bad,) = broken_twins([(pipe(kb, TASK), "pypto.index_select(emb_weight, 0, idx_all)",
                            "pypto.index_select(emb_weight, 0, idx_all + 1)")])
    assert bad.status != J.OK and bad.passed is False, (bad.label, bad.status, bad.error)


@pytest.mark.sim
@pytest.mark.parametrize("name,front_end", [("embed_norm", "static"), ("embed_norm", "traced"),
                                            ("bias_table", "traced")])
def test_models_with_an_embedding_verify_end_to_end(cache, kb, name, front_end):
    p = Pipeline(kb, Design(task=str(TRACED / f"{name}.py"), front_end=front_end))
    (r,) = verify_many([p], jobs=1, cache=False)
    assert r.supported and r.passed, r.reason
    assert r.kernels == 2 and r.kernels_run == r.kernels and r.pass_rows == 6 * r.kernels
