"""The names of every check in the code, by module: how a rule in a pack is traced to code.

A rule's `enforced_by` lists the checks that verify a design against it (each proves itself with
its own valid and invalid examples); `applied_by` lists the generators that obey it while they
build something (the ranking, the planners, the code generator, the cost sweep). The loader
refuses a name the code does not have. Each module named below exposes a `CHECKS` dict and an
`APPLIES` dict mapping these names to the function or class that does the work (and that carries
`__cites__`). This file is static on purpose: `kb list`
shows where each rule is checked without importing libcst or the compiler; a test keeps it equal
to the modules' own CHECKS dicts.
"""

from __future__ import annotations

MODULES: dict[str, str] = {
    "tiles": "pypto_tui.tiles",
    "loops": "pypto_tui.loops",
    "contract": "pypto_tui.contract",
    "dims": "pypto_tui.dims",
    "codegen": "pypto_tui.codegen",
    "lint": "pypto_tui.lint",
    "sim": "pypto_tui.sim",
}

CHECK_NAMES: frozenset[str] = frozenset({
    # tile calculator
    "tiles.rank_match", "tiles.vec_rank", "tiles.prod_budget", "tiles.auto_tiles", "tiles.last_dim_align",
    "tiles.ub_capacity", "tiles.ub_step_down", "tiles.no_waste", "tiles.contiguous", "tiles.reduce_axis_used",
    "tiles.nonreduce_spend", "tiles.reduce_sweet_spot", "tiles.cube_tiles", "tiles.gather_tile",
    "tiles.carried_chunks",
    # loop planner
    "loops.need", "loops.ladder", "loops.tail", "loops.outermost", "loops.per_iter_tiles", "loops.matmul_inner",
    # contract and dimensions
    "contract.formula", "contract.operator", "contract.reduction", "contract.asymmetry",
    "contract.selfcheck", "contract.unknown_fields", "contract.init_params", "contract.dynamic_axes",
    "dims.rank_strategy", "dims.merge_reduce",
    # lint
    "lint.scalar_left", "lint.unary_minus", "lint.scalar_first_arg", "lint.nested_loop", "lint.loop_axis",
    "lint.forward_torch", "lint.kernel_reshape", "lint.dim_branch", "lint.reduce_api", "lint.literal_tiles",
    "lint.tile_waste", "lint.tile_extra_dims", "lint.view_constant", "lint.out_rebind",
    "lint.move_after_loop", "lint.cond", "lint.return_in_kernel", "lint.init_signature",
    "lint.api_names", "lint.jit_decorator", "lint.tile_order", "lint.builtin_minmax", "lint.cube_tiles",
    "lint.unroll_innermost", "lint.view_rank", "lint.kernel_loops", "lint.reshape_shape", "lint.ub_estimate",
    "lint.loop_options", "lint.known_modules", "lint.loop_tail",
    # the compiler in the loop
    "sim.verify",
})

APPLIER_NAMES: frozenset[str] = frozenset({
    "tiles.rank_candidates", "tiles.choose", "tiles.choose_cube", "loops.plan", "loops.choice", "dims.plan",
    "codegen.factory", "codegen.model_new", "codegen.operators", "codegen.loop_tail", "codegen.patterns",
    "codegen.dynamic_axis",
    "sim.sweep",
})


def module_of(check: str) -> str:
    """The module whose CHECKS (or APPLIES) dict holds `check` ('tiles.prod_budget' -> 'pypto_tui.tiles')."""
    return MODULES.get(check.split(".", 1)[0], "?")
