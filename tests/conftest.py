"""Shared fixtures: the default pack, the minimal test pack, and the fixture folders."""

from __future__ import annotations

import inspect
import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

from pypto_tui.kb import KnowledgeBase, bundled_pack_dir, load_pack
from pypto_tui.sim.availability import check_sim

# Property tests assert properties, not speed: on a loaded CI machine an example missed hypothesis's
# default 200 ms deadline (test_evaluation_matches_direct_formulas), a failure that says nothing.
settings.register_profile("pypto-tui", deadline=None)
settings.load_profile("pypto-tui")

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
sys.path.insert(0, str(TESTS))  # `from support import ...` (helpers shared across test folders)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """A cache holding the stored trace of every traced fixture (tests/fixtures/traces), under the key the
    tracer computes, as the tracer would have left it: a test reads a traced model without running its
    code or importing torch."""
    import json

    from pypto_tui.kb import get_kb
    from pypto_tui.trace.tracer import _TraceCache, pack_id, torch_version, trace_key

    version = torch_version(sys.executable)
    if version is None:
        pytest.skip("torch is not installed: the trace cache key names its version")
    pack = pack_id(get_kb(bundled_pack_dir()))
    store = _TraceCache(tmp_path / "traces")
    for stored in sorted((FIXTURES / "traces").glob("*.json")):
        task = next(f for d in ("tasks_traced", "tasks_chain") if (f := FIXTURES / d / f"{stored.stem}.py").exists())
        store.put(trace_key(task.read_bytes(), version, pack), json.loads(stored.read_text()))
    monkeypatch.setenv("PYPTO_TUI_CACHE_DIR", str(tmp_path))
    return tmp_path


@pytest.fixture(scope="session")
def kb() -> KnowledgeBase:
    return load_pack(bundled_pack_dir())


@pytest.fixture(scope="session")
def kb_rules(tmp_path_factory: pytest.TempPathFactory) -> KnowledgeBase:
    """The default pack with `ranking = "rules"`: the documents' picks alone, for tests of what the
    documents choose and what follows from it (a step-down), whatever the default ranks by."""
    own = tmp_path_factory.mktemp("rules-pack")
    (own / "pack.toml").write_text('[pack]\nname = "rules"\nversion = "1"\nschema = 1\nextends = "default"\n')
    text = (bundled_pack_dir() / "estimate.toml").read_text()
    (own / "estimate.toml").write_text(text.replace('ranking = "auto"', 'ranking = "rules"', 1))
    pack = load_pack(own)
    assert pack.estimate is not None and pack.estimate.ranking == "rules"
    return pack


@pytest.fixture(scope="session")
def kb_minimal() -> KnowledgeBase:
    return load_pack(FIXTURES / "kb_minimal")


QUICK_VERIFY = {"PYPTO_TUI_VERIFY_TRIALS": "1", "PYPTO_TUI_VERIFY_SIZES": "1"}
"""One input seed at one test size: each seed and size is a compile and an interpreter run, and a suite
of verifies at the pack's two by two ran past CI's 20 minutes (41 min 48 s). Tests of the seeds and
the second size themselves are marked `full_depth` and run at the pack's depth (a module- or
session-scoped fixture that needs it passes `Criterion(trials=..., sizes=...)`). Set for the whole
process, so fixtures of every scope and the CLI's subprocesses see it."""
os.environ.update(QUICK_VERIFY)


@pytest.fixture(autouse=True)
def _isolated_state(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch,
                    request: pytest.FixtureRequest) -> None:
    """Keep every test away from the user's real state, cache and pack settings; verify quickly
    unless the test is about verification's depth."""
    monkeypatch.delenv("PYPTO_TUI_KB", raising=False)
    for var, value in QUICK_VERIFY.items():
        if request.node.get_closest_marker("full_depth") is None:
            monkeypatch.setenv(var, value)  # a test that unset it does not leak to the next
        else:
            monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("PYPTO_TUI_STATE_DIR", str(tmp_path_factory.mktemp("state")))
    monkeypatch.setenv("PYPTO_TUI_DATA_DIR", str(tmp_path_factory.mktemp("data")))  # suites' run history


SLOW_MODULES = ("tui/test_snapshots.py", "tui/test_full_design.py", "tui/test_sim_actions.py",
                "tui/test_tiles_live.py")
SLOW_NAMES = ("test_kill_9_then_restore_offered", "test_two_real_app_processes_then_kill_the_first")
PILOT_SMOKE = ("test_prefilled_from_task", "test_open_dialog_reports_missing_file_in_place",
               "test_second_task_from_step_1_shows_the_new_contract", "test_rule_browser_filters_as_you_type")
"""The Pilot tests that stay in the fast run: one per area (contract form, dialogs, issue 15)."""


def _slow(item: pytest.Item) -> bool:
    """What `pytest -m "not sim and not slow"` (the developers' fast run) leaves to CI: app flows
    through several steps, snapshots, real app processes, torch and the wheel build."""
    path = item.path.as_posix()
    if any(item.get_closest_marker(m) is not None for m in ("torch", "packaging")):
        return True
    if any(path.endswith(m) for m in SLOW_MODULES) or item.name.split("[")[0] in SLOW_NAMES:
        return True
    fn = getattr(item, "function", None)
    return "/tests/tui/" in path and inspect.iscoroutinefunction(fn) and item.name.split("[")[0] not in PILOT_SMOKE


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under xdist (`-n 2 --dist loadgroup`), keep compiler-backed tests that share a build on one
    worker (see compiler_group) but let the two workers share the rest: with one group for all of
    them, one worker compiled for 35 minutes while the other sat idle after its 10. Mark the slow
    tests (see `_slow`) so the fast run can leave them out. Skip the tests marked `sim` when pypto 0.2.0
    or torch is missing: the marker decides, never the folder (every test under tests/sim has `sim`
    among its keywords, so matching keywords skipped the numpy-only comparison tests with the rest)."""
    avail = check_sim()
    _sample_for_ci(items)
    for item in items:
        if item.get_closest_marker("sim") is not None:
            item.add_marker(pytest.mark.xdist_group(compiler_group(item)))
            if not avail.ok:
                item.add_marker(pytest.mark.skip(reason=avail.message))
        if _slow(item):
            item.add_marker(pytest.mark.slow)


CI_SAMPLE = {
    "tests/lint/test_compiler_probes.py::test_probe_verdict": 2,
    "tests/lint/test_expert_set_compiler.py::test_correct_kernel_verifies": 2,
    "tests/lint/test_expert_set_compiler.py::test_broken_twin_fails_when_its_defect_is_an_error": 3,
    "tests/graph/test_traced_torch.py::test_both_front_ends_give_the_same_kernels": 2,
    "tests/graph/test_traced_torch.py::test_models_the_static_reader_refuses_are_traced": 2,
    "tests/graph/test_registry.py::test_unary_references_match_torch": 16,
    "tests/graph/test_registry.py::test_binary_references_match_torch_with_broadcasting": 6,
    "tests/sim/test_design_runs.py::test_every_scaffold_verifies_against_its_baseline": 2,
    "tests/sim/test_compare_step.py::test_the_baseline_and_the_comparison_run_in_a_process_of_their_own": 1,
    "tests/contract/test_selfcheck.py::test_reference_agrees_with_baseline": 2,
    "tests/contract/test_selfcheck.py::test_reference_agrees_on_hard_corners": 2,
    "tests/tui/test_new_families.py::test_new_family_walks_to_its_kernel": 1,
    "tests/tui/test_full_design.py::test_full_design_to_export": 1,
    "tests/tui/test_loops_view.py::test_the_table_title_names_who_picked_the_star": 1,
    "tests/tui/test_sim_actions.py::test_without_the_simulator_the_actions_say_what_to_install": 1,
    "tests/tui/test_robust_app.py::test_corrupt_autosave_is_set_aside_and_the_app_starts": 2,
    "tests/robust/test_process_endings.py::test_contract_run_leaves_nothing_behind": 2,
    "tests/codegen/test_sim_build.py::test_builds_under_sim_at_the_task_shapes": 2,
    "tests/codegen/test_sim_build.py::test_matches_the_baseline_at_reduced_shapes": 2,
}
"""Parametrized heavy tests CI runs on a sample of (the first N cases; the rest are `exhaustive`):
every case of each is one more compile or torch run of a kind the sample already covers, and the
whole suite ran 39 minutes against CI's 20."""
CI_EXHAUSTIVE = (
    "tests/robust/test_process_endings.py::test_verify_and_sim_leave_no_task_process_behind[verify-normal]",
    "tests/robust/test_process_endings.py::test_verify_and_sim_leave_no_task_process_behind[verify-SIGHUP]",
    "tests/robust/test_process_endings.py::test_verify_and_sim_leave_no_task_process_behind[verify-SIGTERM]",
    "tests/sim/test_family_conv.py::test_a_row_strided_2d_pool_verifies_one_output_row_per_iteration",
    "tests/sim/test_family_conv.py::test_a_pointwise_stage_reading_the_first_image_for_every_image_fails",
    "tests/sim/test_family_conv.py::test_a_design_compiles_at_the_tasks_full_shape",
    "tests/sim/test_former_failures.py::test_the_former_failures_verify_at_every_pass",
    "tests/sim/test_docs_flavour.py::test_docs_flavour_kernels_verify",
    "tests/sim/test_traced_verify.py::test_a_nested_model_verifies_through_the_traced_front_end_and_its_twin_fails[nested_bn_eval.py]",
    "tests/sim/test_traced_verify.py::test_causal_attention_as_gpt_code_writes_it_verifies_and_a_copy_of_the_wrong_block_fails",
    # twins of forms whose verify stays in CI (CI_AND_REST's "ci" case); planted bugs of every family stay
    "tests/sim/test_insert_flat.py::test_a_misplaced_spread_or_zero_slab_fails",
    "tests/sim/test_plane_blocks.py::test_a_block_shifted_back_verifies_and_blocks_that_all_start_at_zero_fail",
    "tests/sim/test_band_matmul.py::test_a_band_without_the_padding_or_rows_at_the_wrong_offset_fail",
    "tests/sim/test_phase_split.py::test_a_view_of_the_wrong_phase_or_a_phase_stored_at_the_wrong_place_fails",
    "tests/sim/test_family_scan.py::test_a_carried_scan_past_four_chunks_compiles_only_with_the_smaller_tile",
    "tests/sim/test_docs_flavour.py::test_dynamic_axis_kernels_verify_like_the_static_ones",
    "tests/tui/test_full_design.py::test_full_design_to_export[scalar_mul_large]",
    "tests/sim/test_chain_kernel_file.py::test_an_exported_chain_module_runs_at_the_generated_modules_test_sizes",
    "tests/sim/test_design_runs.py::test_tile_sweep_shows_the_cost_model_disagreeing_with_the_1kb_rule",
    "tests/sim/test_shared_zygote.py::test_commands_one_after_another_fork_from_the_slot_zygote",
    "tests/graph/test_module_plan.py::test_gemm_epilogue_modules_verify_against_torch[gemm_scale_leaky_relu.py]",
    "tests/suite/test_suite_sim.py::test_a_suite_killed_with_kill_9_resumes_without_redoing_finished_tasks",
    "tests/sim/test_family_matmul_forms.py::test_broken_matmul_forms_fail",
    "tests/sim/test_aligned_clamp.py::test_a_group_norm_tested_at_unaligned_rows_verifies",
    "tests/tui/test_conv_design.py::test_a_depthwise_separable_conv_plans_its_pointwise_stage",
    "tests/suite/test_suite_sim.py::test_local_pool_and_a_two_worker_local_cluster_give_the_same_records",
    "tests/suite/test_dask_kernel_jobs.py::test_a_modules_kernels_verify_on_a_two_worker_cluster_as_on_the_local_pool",
    "tests/codegen/test_window_pattern.py::test_export_over_the_conv_fixtures_scaffolds_every_one",
    "tests/codegen/test_issue11_export.py::test_export_scaffolds_every_issue11_fixture_lint_clean",
    "tests/tui/test_snapshots.py::test_kernel_matmul_light",
    "tests/tui/test_kernel_panel.py::test_exported_to_belongs_to_the_task_it_was_exported_from",
)
"""Single heavy cases (15-160 s each) whose kind another CI test covers: verify's ends (sim's three
ends stay), the row-per-iteration pool, the former failures, the chain module at its test sizes (the
per-kernel and chain verify tests stay), the GEMM epilogue (off in the bundled pack), the kill -9 resume
(a stub-pool test of --resume stays), ... The suite took 29 minutes against CI's 20 with them; without
them a clean-clone .ci/run took 18 min 47 s."""


def _sample_for_ci(items: list[pytest.Item]) -> None:
    """Mark the cases of CI_SAMPLE beyond each test's first N, and CI_EXHAUSTIVE, `exhaustive`."""
    seen: dict[str, int] = {}
    for item in items:
        base = item.nodeid.split("[")[0]
        if base in CI_SAMPLE and "[" in item.nodeid:
            seen[base] = seen.get(base, 0) + 1
            if seen[base] > CI_SAMPLE[base]:
                item.add_marker(pytest.mark.exhaustive)
        if item.nodeid.split("@")[0] in CI_EXHAUSTIVE:
            item.add_marker(pytest.mark.exhaustive)


SHARED_SCOPES = ("module", "class", "package")


def compiler_group(item: pytest.Item) -> str:
    """The xdist group of a compiler-backed test: its module when it uses a build shared across the
    module (a module-scoped fixture, or a session one defined beside the tests rather than in this
    file), else the test alone, so one module's independent compiles can run on both workers
    (tests/sim/test_family_conv.py's three sweeps took 485 s in a row on one worker)."""
    info = getattr(item, "_fixtureinfo", None)
    for defs in (info.name2fixturedefs.values() if info is not None else ()):
        for fixturedef in defs:
            if fixturedef.scope in SHARED_SCOPES:
                return f"compiler:{item.path.name}"
            func = getattr(fixturedef, "func", None)
            where = getattr(func, "__module__", "") or ""
            if fixturedef.scope == "session" and where.startswith("tests") and not where.endswith("conftest"):
                return f"compiler:{item.path.name}"
    return f"compiler:{item.nodeid.split('[')[0]}"


NEEDS_TOOLS = ("could not import 'torch'", "needs CPU torch", "needs torch", "the simulator needs",
               "pip install torch", "[sim]")
"""Words in a skip reason that say a compiler-backed test could not run (a missing install)."""


def compiler_skip_fails_in_ci(item: pytest.Item, report: pytest.TestReport) -> bool:
    """In CI (CI=true) a test that needs the compiler or torch and cannot run must fail the run: a
    broken `[sim]` install would otherwise skip every compiler-backed test and CI would go green
    without the compiler."""
    if os.environ.get("CI", "").lower() != "true" or not report.skipped:
        return False
    reason = str(report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr or "")
    marked = any(item.get_closest_marker(m) is not None for m in ("sim", "torch"))
    return marked or any(word in reason for word in NEEDS_TOOLS)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):  # type: ignore[no-untyped-def]
    outcome = yield
    report = outcome.get_result()
    if compiler_skip_fails_in_ci(item, report):
        reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else report.longrepr
        report.outcome = "failed"
        report.longrepr = f"CI=true and this compiler-backed test could not run: {reason}"
