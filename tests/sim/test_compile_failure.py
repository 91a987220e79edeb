"""A compile failure's verdict names the kernel and says what the compiler's code means (no compiler
needed: the worker's record of the failed launch and the pack's table are plain data)."""

from __future__ import annotations

import pytest

from pypto_tui.errors import PackError
from pypto_tui.kb import load_pack
from pypto_tui.sim.compile_failure import describe, which_kernel

DESIGNS = [{"kernel": 0, "ops": "linear"}, {"kernel": 1, "ops": "add, mul, leaky_relu"}]
K1 = {"name": "broadcast_kernel", "line": 124, "qualname": "create_broadcast_kernel_K1.<locals>.broadcast_kernel"}


def test_a_module_kernel_is_named_by_its_index_ops_and_line() -> None:
    assert which_kernel(K1, DESIGNS) == "kernel 1 (add, mul, leaky_relu; jit `broadcast_kernel`, module line 124)"


def test_a_single_kernel_module_names_its_jit_function() -> None:
    one = {"name": "softmax_kernel", "line": 40, "qualname": "create_softmax_kernel.<locals>.softmax_kernel"}
    assert which_kernel(one, []) == "the kernel (jit `softmax_kernel`, module line 40)"
    assert which_kernel(None, DESIGNS) == ""


def test_the_pack_explains_a_known_code_with_its_measurement(kb) -> None:
    reason = describe("RuntimeError: Errcode: F21004! op [EXP]tile shape not set", K1, DESIGNS, kb.verify)
    assert reason.startswith("kernel 1 (add, mul, leaky_relu; jit `broadcast_kernel`, module line 124) failed to "
                             "compile: RuntimeError: Errcode: F21004!")
    assert "set_vec_tile_shapes" in reason and "measured: probe op_before_tiles" in reason


def test_the_specific_entry_wins_and_an_unknown_message_is_left_alone(kb) -> None:
    ub = describe("Alloc tensor [9] size [262144] exceeds MEM_UB size [196608]!", None, [], kb.verify)
    assert "P4.tile-budget" in ub and "unified buffer" in ub
    assert describe("Errcode: FFFFFF! Run pass failed.", K1, DESIGNS, kb.verify) == (
        "kernel 1 (add, mul, leaky_relu; jit `broadcast_kernel`, module line 124) failed to compile: "
        "Errcode: FFFFFF! Run pass failed.")


def test_a_pack_entry_missing_its_advice_is_refused_with_file_and_key(tmp_path, kb) -> None:
    import shutil

    from pypto_tui.kb import bundled_pack_dir

    pack = tmp_path / "pack"
    shutil.copytree(bundled_pack_dir(), pack)
    verify = pack / "verify.toml"
    verify.write_text(verify.read_text(encoding="utf-8").replace(
        'advice = "make kL0 and nL0 multiples of 16"\n', ""), encoding="utf-8")
    with pytest.raises(PackError, match=r"verify\.toml.*compile_error\.FC4001\.advice"):
        load_pack(pack)
