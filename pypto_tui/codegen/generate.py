"""`generate(pipeline)`: step 5 of the design, the kernel module for the design so far.

Pure: the same design and pack give byte-identical source. A design that cannot be scaffolded
(an operator with no pattern, an unknown contract field, an op pypto cannot express) gives
`supported=False` with the reason; bad input (no task file) raises InputError as every step does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pypto_tui.codegen.result import GeneratedKernel
from pypto_tui.codegen.spec import Unsupported
from pypto_tui.errors import InputError
from pypto_tui.findings import Finding

if TYPE_CHECKING:
    from pypto_tui.design import Pipeline

PATTERN_RULES = {
    "A": "A.elementwise-flat", "B": "B.matmul-m-loop", "C": "C.norm-loop", "D": "D.loss-scalar",
    "E": "E.global-accumulator",
}


def generate(pipeline: Pipeline) -> GeneratedKernel:
    from pypto_tui.codegen.builder import Builder
    from pypto_tui.codegen.context import context_of
    from pypto_tui.codegen.module import assemble
    from pypto_tui.codegen.patterns import select

    kb = pipeline.kb
    flavour = kb.flavour(pipeline.design.flavour).name
    pattern = ""
    try:
        ctx = context_of(pipeline)
        pattern, build = select(ctx)
        b = Builder(ctx)
        build(b)
        module = assemble(b)
        source = module.code
        compile(source, "<generated kernel>", "exec")
    except Unsupported as exc:
        return GeneratedKernel("", False, str(exc), pattern, flavour, {}, [])
    except InputError:
        raise  # bad input (a missing template in the user's pack, no task file): the caller reports it
    except Exception as exc:  # a bug here must not take the app down: report it as the reason
        reason = f"internal error in the code generator ({type(exc).__name__}: {exc}); please report it"
        return GeneratedKernel("", False, reason, pattern, flavour, {}, [])
    findings: list[Finding] = []
    rule = PATTERN_RULES.get(b.pattern)
    if rule:
        findings.append(Finding(rule, "info", b.summary, kb.authority_of(rule)))
    seen: set[tuple[str, str]] = set()
    for f in b.findings:
        if (f.rule, f.message) not in seen:
            seen.add((f.rule, f.message))
            findings.append(f)
    constants = {c.name: c.to_dict() for c in b.constants}
    return GeneratedKernel(source, True, "", b.pattern, flavour, constants, findings, b.summary)
