"""swim.py: cost figures from the swim file, reasons from the plog (synthetic files, no pypto)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pypto_tui.sim import swim

# ELU 16K from the research note (3.1): two tasks, span 2116 cycles -> 1.18 us, util 2.52 %.
ELU_SWIM = [
    {"blockIdx": 0, "coreType": "AIV", "tasks": [{"taskId": 0, "execStart": 3623, "execEnd": 5539}]},
    {"blockIdx": 1, "coreType": "AIV", "tasks": [{"taskId": 1, "execStart": 3823, "execEnd": 5739}]},
    *({"blockIdx": i, "coreType": "AIV", "tasks": []} for i in range(2, 48)),
    *({"blockIdx": 48 + i, "coreType": "AIC", "tasks": []} for i in range(24)),
    {"blockIdx": 99, "coreType": "AICPU", "tasks": [{"taskId": 9, "execStart": 0, "execEnd": 99999}]},
]


def test_summary_matches_the_package_definition() -> None:
    s = swim.summarise_swim(ELU_SWIM)
    assert s.cycles == 2116 and s.tasks == 2 and s.lanes == 72
    assert s.e2e_us == pytest.approx(2116 / 1800)
    assert round(s.e2e_us, 2) == 1.18
    assert s.utilisation == pytest.approx(2 * 1916 / (72 * 2116))


def test_cycles_per_us_is_a_parameter() -> None:
    assert swim.summarise_swim(ELU_SWIM, 1000).e2e_us == pytest.approx(2.116)
    with pytest.raises(ValueError):
        swim.summarise_swim(ELU_SWIM, 0)


def test_no_tasks_is_zero() -> None:
    s = swim.summarise_swim([{"coreType": "AIV", "tasks": []}])
    assert (s.e2e_us, s.tasks, s.utilisation) == (0.0, 0, 0.0)


def test_files_found_in_launch_order(tmp_path: Path) -> None:
    for name in ("output_20261130_012416_900000_1_C1", "output_20261130_012416_100000_1_C0"):
        d = tmp_path / name / swim.COST_DIR
        d.mkdir(parents=True)
        (d / swim.SWIM_FILE).write_text(json.dumps(ELU_SWIM))
    files = swim.find_swim_files(tmp_path)
    assert [f.parent.parent.name[-2:] for f in files] == ["C0", "C1"]
    assert swim.read_swim(files[0]).tasks == 2


# Real plog lines from pypto 0.2.0 (softmax (16, 32768), tile (1, 32768)).
_AT = "[ERROR] PYPTO(4339):2026-11-30 01:21:29.531 "
_OP = "[schedule_base.h:358][PASS]:[OoOScheduleBase.Operation]:"
UB_PLOG = "\n".join([
    _AT + _OP + "OP ROWMAX_SINGLE[10011] in/output total size [196640] exceeds MEM_UB size [196608]!",
    _AT + _OP + " op: ROWMAX_SINGLE[10011] | inputs: { RawTensor [47] <1 x 32768 x DT_FP32> }",
    _AT + _OP + "ROWMAX_SINGLE[10011] checkOpBufferSize failed! [FuncMagic:8][OpMagic:10011][Backtrace]:.",
    _AT + "[pass.cpp:79][PASS]:[Pass.Function]:Run pass [OoOSchedule] failed.",
]) + "\n"
RANK_PLOG = "\n".join([
    "[INFO] PYPTO(1):2026-11-30 01:21:29.000 [x.cpp:1][PASS]:something fine",
    "[ERROR] PYPTO(77):2026-11-30 01:30:00.100 [expand.cpp:9][PASS]:[Expand.Function]:FUnction[TENSOR_x] "
    "ExpandFunction failed: Tile shape size 1 is not matched the output shape size 2.",
    "[ERROR] PYPTO(77):2026-11-30 01:30:00.100 [pass.cpp:79][PASS]:[Pass.Function]:Run pass [ExpandFunction] failed.",
]) + "\n"


def test_plog_messages_are_stripped() -> None:
    msgs = swim.plog_error_messages(UB_PLOG.splitlines())
    assert len(msgs) == 4
    assert msgs[0] == "OP ROWMAX_SINGLE[10011] in/output total size [196640] exceeds MEM_UB size [196608]!"
    assert msgs[-1] == "Run pass [OoOSchedule] failed."


def test_reason_is_the_first_specific_error(tmp_path: Path) -> None:
    plog = tmp_path / "debug" / "plog"
    plog.mkdir(parents=True)
    (plog / "pypto-log-4336_1.log").write_text(UB_PLOG)
    assert "exceeds MEM_UB size" in (swim.compile_error_reason(tmp_path) or "")
    (plog / "pypto-log-4336_1.log").write_text(RANK_PLOG)
    assert (swim.compile_error_reason(tmp_path) or "").endswith("not matched the output shape size 2.")


def test_the_cost_models_plotting_script_failures_are_not_the_reason() -> None:
    # measured (level-2 task 51, pypto 0.2.0): the plog of a compile refused for its unified buffer
    # opens with the failures of the plotting scripts the cost model runs after every kernel
    script = "/site-packages/pypto/lib/scripts/"
    msgs = [f"cmd error: python3 {script}draw_pipe_swim_lane.py /tmp/o/_simulate.pipe.swim.json",
            f"cmd error: python3 {script}print_swim_lane.py /tmp/o/_simulate.swim.json -t",
            "OP WHERE_TT[10067] in/output total size [209056] exceeds MEM_UB size [196608]!",
            "WHERE_TT[10067] checkOpBufferSize failed! [FuncMagic:323][OpMagic:10067][Backtrace]:.",
            "Run pass [OoOSchedule] failed."]
    assert swim.pick_reason(msgs) == msgs[2]
    assert swim.pick_reason(msgs[:2]) == msgs[0]  # nothing else logged: still a reason


def test_only_unwinding_lines_still_give_a_reason() -> None:
    assert swim.pick_reason(["Run pass <X> failed."]) == "Run pass <X> failed."
    assert swim.pick_reason([]) is None


def test_no_plog_no_reason(tmp_path: Path) -> None:
    assert swim.compile_error_reason(tmp_path / "missing") is None


def test_exception_text_summary() -> None:
    text = (
        "RuntimeError: Errcode: F21004!\nop [EXP]tile shape not set, func Operation, file operation.cpp, line 184\n"
        "libtile_fwk_interface.so(npu::tile_fwk::Operation::Operation(...)+0x164e) [0x7f374cee64de]\n"
    )
    assert swim.summarise_exception_text(text) == "RuntimeError: Errcode: F21004! op [EXP]tile shape not set"
    text = (
        "Errcode: FFFFFF!\nRun pass failed., func CompileFunction, file host_machine.cpp, line 179\n"
        "libc.so.6(+0x1) [0x1]\n"
    )
    assert swim.summarise_exception_text(text) == "Errcode: FFFFFF! Run pass failed."
    one = "ValueError: Return annotation is not allowed. Use an out parameter."
    assert swim.summarise_exception_text(one) == one
    assert swim.summarise_exception_text("\x1b[1mboom\x1b[0m\nsecond line") == "boom"
