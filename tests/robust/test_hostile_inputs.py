"""Issue 15, items 2, 3 and 7: hostile task files and absurd shapes are refused in one line, fast.

Each case runs the real `pypto-tui` in a subprocess: before the fix some of them crashed the
interpreter (a segmentation fault from libcst's native parser) or ran for minutes."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from hostile import HOSTILE_TASKS, big_list, one_error_line, task_with_inputs

from pypto_tui.kb import get_kb
from pypto_tui.source_bounds import MAX_DEPTH, SourceTooComplex, check_source
from pypto_tui.tiles import axis_values, rank_candidates


@pytest.fixture(scope="module")
def hostile_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("hostile")
    for name, make in HOSTILE_TASKS.items():
        (d / name).write_text(make(), encoding="utf-8")
    return d


@pytest.mark.parametrize(("name", "needle"), [
    ("nested_parens.py", "nests expressions too deeply"),     # was: segmentation fault, rc 139
    ("nested_brackets.py", "nests expressions too deeply"),   # was: segmentation fault
    ("long_sum.py", "nests expressions too deeply"),          # was: still running after 120 s
    ("big_list.py", "reads at most"),       # 25 MB: was: still running after 120 s
    ("high_rank.py", "sizes above 2**40"),                    # 200-D randn: was an OOM at 14.4 GB
    ("huge_dims.py", "sizes above 2**40"),
])
@pytest.mark.parametrize("command", ["tile", "loop", "scaffold"])
def test_hostile_task_is_one_line_exit_2(hostile_dir: Path, run_cli, name: str, needle: str, command: str) -> None:
    t0 = time.monotonic()
    rc, _, err = run_cli(command, str(hostile_dir / name), timeout=60)
    if command == "scaffold" and "2**40" in needle:
        # the file itself reads fine; scaffold reports the task as unsupported, saying why (exit 1)
        assert rc == 1 and needle in err and len(err.strip().splitlines()) == 1, err
    else:
        assert rc == 2, err
        assert needle in one_error_line(err)
    assert time.monotonic() - t0 < 30


@pytest.mark.parametrize("name", ["nested_parens.py", "nested_brackets.py", "long_sum.py", "big_list.py"])
def test_contract_and_lint_refuse_hostile_files(hostile_dir: Path, run_cli, name: str) -> None:
    rc, out, err = run_cli("contract", str(hostile_dir / name), "--json", timeout=60)
    assert rc == 2 and json.loads(out)["error"]
    one_error_line(err)
    rc, out, err = run_cli("lint", str(hostile_dir / name), timeout=60)
    assert rc == 1 and "Traceback" not in err  # one `lint.parse` finding, the run goes on
    assert out.count("\n") == 1 and ("syntax-error cannot lint" in out or "io-error cannot read" in out)


def test_lint_folder_of_hostile_files_finishes(hostile_dir: Path, run_cli) -> None:
    t0 = time.monotonic()
    rc, _, err = run_cli("lint", str(hostile_dir), timeout=120)
    assert rc == 1 and "Traceback" not in err
    assert time.monotonic() - t0 < 60


def test_bounds_on_source() -> None:
    ok = task_with_inputs("torch.randn(16, 256)")
    assert check_source(ok, "t.py") is None
    assert check_source("def f(:\n", "t.py") is not None  # a syntax error is returned, not raised
    deep = "x = " + "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5) + "\n"
    with pytest.raises(SourceTooComplex):
        check_source(deep, "t.py")
    t0 = time.monotonic()
    with pytest.raises(SourceTooComplex, match="reads at most"):
        check_source(big_list(3.0), "t.py")
    assert time.monotonic() - t0 < 2


@pytest.mark.parametrize("shape", ["4611686018427387904,128", "9223372036854775807", "99999999999999999999999,4",
                                   "16,16,16,16,16,16,16,16,16,16,16,16,16,16,16,16", ",".join(["2"] * 40)])
def test_absurd_shapes_are_refused_at_once(run_cli, shape: str) -> None:
    t0 = time.monotonic()
    rc, out, err = run_cli("tile", "--shape", shape, "--json", timeout=60)
    assert rc == 2 and json.loads(out)["error"]
    one_error_line(err)
    assert time.monotonic() - t0 < 10


def test_rank_above_the_pack_limit_is_not_enumerated() -> None:
    kb = get_kb()
    t0 = time.monotonic()
    plan = rank_candidates(kb, (2,) * 16, "fp32")  # 16-D: was 20 s and 2 GB
    assert plan.candidates == () and plan.enumerated == 0
    assert "rank 16 > 4" in plan.notes[0]
    assert time.monotonic() - t0 < 1


@pytest.mark.parametrize("shape", [
    (2**40, 255, 1, 1), (999983, 1000003, 7, 31), (30, 1000, 720, 4095), (2**16, 3**8, 5**4, 7**3),
    (720720, 720, 720, 720),
    (1099511627689, 1, 1, 1),  # a prime near 2**40
])
def test_enumeration_work_is_bounded_whatever_the_sizes(shape: tuple[int, ...]) -> None:
    """The 4-D enumeration is < 20 ms on an idle machine (benchmarks/bench_core.py); here, on a shared
    CI runner, the bound asserted is the work: every axis is searched for at most the pack's budget."""
    kb = get_kb()
    cap = kb.limits.max_elements
    for n in shape:
        assert all(v <= cap or v == n for v in axis_values(n, cap))
    t0 = time.process_time()  # CPU time: a loaded runner's waiting is not the enumeration's cost
    plan = rank_candidates(kb, shape, "fp32", 1, top=10)
    elapsed = time.process_time() - t0
    assert plan.recommended is not None and 0 < plan.enumerated < 1 << 21
    assert elapsed < 0.5


def test_loop_with_a_huge_count_is_bounded(run_cli) -> None:
    t0 = time.monotonic()
    rc, out, _ = run_cli("loop", "--shape", "1000003,4096", "--tile", "1,4096", "--loop-count", str(2**40),
                         "--json", timeout=60)
    assert rc in (0, 1) and json.loads(out)["candidates"][0]["loop_count"] == 2**40
    assert time.monotonic() - t0 < 10


def test_zero_dimension_in_a_task_is_one_line_without_numpy_warnings(tmp_path: Path, run_cli) -> None:
    task = tmp_path / "zero.py"
    task.write_text(task_with_inputs("torch.randn(16, 0)"))
    rc, _, err = run_cli("tile", str(task))
    assert rc == 2 and "RuntimeWarning" not in err
    assert "positive whole number" in one_error_line(err)


def test_alignment_hint_past_the_axis_names_the_axis(kb) -> None:
    """A tile of 99999 on an axis of 1000 suggested "use 99992 or 100000": both past the axis."""
    from pypto_tui.tiles import evaluate_tile

    ev = evaluate_tile(kb, (16, 1000), "fp32", (1, 99999))
    (align,) = [f for f in ev.findings if f.rule == "P4.last-dim-align"]
    assert "99992" not in align.message and "100000" not in align.message
    assert "the axis is 1000 long: use 1000 (the whole axis)" in align.message


def test_a_highly_composite_axis_offers_a_bounded_spread_of_sizes() -> None:
    """720720 has 240 divisors: (720720, 720, 720, 720) made 41,937 tiles (29-37 ms to rank). The
    sizes tried per axis are capped; every power of two and sizes across the range stay."""
    from pypto_tui.tile_space import MAX_AXIS_VALUES

    vals = axis_values(720720, 16384)
    assert len(vals) <= MAX_AXIS_VALUES
    assert {1 << k for k in range(15)} <= set(vals)
    assert all(720720 % v == 0 or v & (v - 1) == 0 for v in vals)
    assert len([v for v in vals if v & (v - 1)]) >= 10  # divisors other than powers of two remain
    small = {1 << k for k in range(12)} | {d for d in range(1, 4001) if 4000 % d == 0}
    assert axis_values(4000, 16384) == sorted(small)  # an ordinary axis keeps every size
    plan = rank_candidates(get_kb(), (720720, 720, 720, 720), "fp32", 1, top=10)
    assert plan.recommended is not None and plan.enumerated < 20000
