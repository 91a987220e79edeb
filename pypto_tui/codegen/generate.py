"""`generate(plan, kb)`: step 5, the kernel module that writes a frozen KernelPlan down.

Pure: the same plan and pack give byte-identical source. Generation never re-plans: the tiles,
cube tiles and loop are the plan's. A plan that cannot be scaffolded (`plan.blocked`, or a case
the pattern does not cover) gives `supported=False` with the reason.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pypto_tui.codegen.result import GeneratedKernel
from pypto_tui.errors import InputError, Unsupported
from pypto_tui.findings import Finding, rule_finding

if TYPE_CHECKING:
    from pypto_tui.kb import KnowledgeBase
    from pypto_tui.plan import KernelPlan


def generate(plan: KernelPlan, kb: KnowledgeBase, *, text: bool = True) -> GeneratedKernel:
    """`text=False` (a kernel of a module, composed from its tree) leaves the source to be written when
    first read; the composed module's text is compiled instead."""
    from pypto_tui.codegen.builder import Builder
    from pypto_tui.codegen.context import GenContext
    from pypto_tui.codegen.module import assemble
    from pypto_tui.codegen.patterns import by_id
    from pypto_tui.codegen.rewrite import code_of

    flavour = kb.flavour(plan.flavour)
    pattern = by_id(plan.pattern) if plan.pattern else None
    try:
        if plan.blocked:
            raise Unsupported(plan.blocked)
        if pattern is None or plan.signature is None:
            raise Unsupported("the plan names no pattern" if pattern is None else
                              "the contract does not record Model's signature: re-open the task file")
        b = Builder(GenContext(kb, flavour, plan, plan.signature))
        pattern.build(b)
        tree = assemble(b)
        source: str | None = None
        if text:
            source = code_of(tree, tree)
            compile(source, "<generated kernel>", "exec")
    except Unsupported as exc:
        return GeneratedKernel("", False, str(exc), plan.pattern, flavour.name, {}, [])
    except InputError:
        raise  # bad input (a missing template in the user's pack): the caller reports it
    except Exception as exc:  # a bug here must not take the app down: report it as the reason
        reason = f"internal error in the code generator ({type(exc).__name__}: {exc}); please report it"
        return GeneratedKernel("", False, reason, plan.pattern, flavour.name, {}, [])
    findings: list[Finding] = _pattern_summary(kb, pattern.rule, b.summary)
    seen: set[tuple[str, str]] = set()
    for f in b.findings:
        if (f.rule, f.message) not in seen:
            seen.add((f.rule, f.message))
            findings.append(f)
    constants = {c.name: c.to_dict() for c in b.constants}
    return GeneratedKernel(source, True, "", b.pattern, flavour.name, constants, findings, b.summary, tree)


def _pattern_summary(kb: KnowledgeBase, rule: str | None, summary: str) -> list[Finding]:
    """The kernel's one-line summary, reported under the rule its pattern implements."""
    return [rule_finding(kb, rule, summary, "info")] if rule else []
