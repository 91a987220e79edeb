"""The semantic contract (rule P0): what a task computes, read statically from its file.

`extract_contract` needs libcst and is imported lazily, so `import pypto_tui.contract` (done by
`pypto_tui.dims` and the one-shot CLI commands) stays cheap. `CHECKS` maps the `enforced_by`
names of rules.toml to the code that enforces them, for the rule catalogue test.
"""

from __future__ import annotations

from typing import Any

from pypto_tui.contract.checks import (
    check_asymmetry,
    check_dynamic_axes,
    check_formula,
    check_init_params,
    check_operator,
    check_reduction,
    check_unknown_fields,
)
from pypto_tui.contract.model import Contract, Input, Reduction
from pypto_tui.contract.selfcheck import SelfCheckResult, self_check

CHECKS = {
    "contract.formula": check_formula,
    "contract.operator": check_operator,
    "contract.reduction": check_reduction,
    "contract.asymmetry": check_asymmetry,
    "contract.selfcheck": self_check,
    "contract.unknown_fields": check_unknown_fields,
    "contract.init_params": check_init_params,
    "contract.dynamic_axes": check_dynamic_axes,
}

__all__ = [
    "CHECKS", "Contract", "Input", "Reduction", "SelfCheckResult", "extract_contract", "reference",
    "self_check",
]


def __getattr__(name: str) -> Any:
    if name == "extract_contract":
        from pypto_tui.contract.extract import extract_contract

        return extract_contract
    if name == "reference":
        from pypto_tui.contract.reference import reference

        return reference
    raise AttributeError(f"module 'pypto_tui.contract' has no attribute '{name}'")
