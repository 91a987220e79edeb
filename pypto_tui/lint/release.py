"""`--pypto auto`: which PyPTO release a kernel module is written for, read from what it uses.

A module that names `pypto.PrecisionType` or decorates with `@pypto.jit(new_ir=True)` is written for
a release after 0.2.0; linting it as 0.2.0 buries it in findings that say so a hundred times. The
inference takes the oldest release whose API has every `pypto.` name the module uses and whose jit
decorator and pypto.loop take every keyword it passes (`parallel=True` is 0.2.1's); when no release
has them all (a misspelt name), the newest release that has the most, so the misspelling is the only
finding. A module that uses
nothing newer is linted for the default release (the installed pypto's, else the pack's), and the
reason names the first few names that decided it, so the lint can say why.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from pypto_tui.lint.analysis import ModuleInfo, dotted, iter_nodes
from pypto_tui.lint.profile import LintSettings, VersionProfile, release_key

AUTO = "auto"
_NAMESPACES = ("frontend", "experimental")
_SHOWN = 3


@dataclass(frozen=True)
class Inferred:
    profile: VersionProfile
    why: str


def used_names(info: ModuleInfo) -> tuple[set[str], set[str]]:
    """(the `pypto.` names the module reads, as the API lists spell them; the jit keywords it passes)."""
    names, keywords, _loops = used_api(info)
    return names, keywords


def used_api(info: ModuleInfo) -> tuple[set[str], set[str], set[str]]:
    """`used_names`, and the keywords its pypto.loop / loop_unroll calls pass (`parallel=True`)."""
    names: set[str] = set()
    keywords: set[str] = set()
    loops: set[str] = set()
    for node in iter_nodes(info.module, into_defs=True):
        if isinstance(node, cst.Call) and info.pypto_call(node, "loop", "loop_unroll") is not None:
            loops |= {a.keyword.value for a in node.args if a.keyword is not None}
        if isinstance(node, cst.Attribute) and not isinstance(info.parent(node), cst.Attribute):
            q = info.qualify(node)
            if q and q.startswith("pypto.") and _imported_head(node, info):
                names.add(_api_name(q[len("pypto."):]))
        elif isinstance(node, cst.ImportFrom) and not node.relative and node.module is not None:
            base = dotted(node.module) or ""
            if base.startswith("pypto.") and not isinstance(node.names, cst.ImportStar):
                names.add(_api_name(base[len("pypto."):]))
            elif base == "pypto" and not isinstance(node.names, cst.ImportStar):
                names |= {_api_name(dotted(a.name) or "") for a in node.names}
        elif isinstance(node, cst.FunctionDef):
            for d in info.jit_decorators(node):
                if isinstance(d.decorator, cst.Call):
                    keywords |= {a.keyword.value for a in d.decorator.args if a.keyword is not None}
    names.discard("")
    return names, keywords, loops


def _imported_head(node: cst.Attribute, info: ModuleInfo) -> bool:
    head: cst.BaseExpression = node
    while isinstance(head, cst.Attribute):
        head = head.value
    if not isinstance(head, cst.Name):
        return False
    _owner, bindings = info.lookup(head.value, info.scope_of(node))
    return bool(bindings) and all(b.how == "import" for b in bindings)  # type: ignore[union-attr]


def _api_name(path: str) -> str:
    parts = path.split(".")
    return f"{parts[0]}.{parts[1]}" if parts[0] in _NAMESPACES and len(parts) > 1 else parts[0]


def infer_release(info: ModuleInfo, settings: LintSettings, default: str | None = None) -> Inferred:
    """The release to lint `info`'s module for, and why (a sentence for the user)."""
    base = settings.profile(default)
    names, keywords, loops = used_api(info)
    ordered = sorted(settings.profiles.values(), key=lambda p: release_key(p.pypto))
    # a loop keyword some release acts on (`parallel=`) says which; one none acts on says nothing
    # (0.2.0 takes any keyword and ignores it: API.loop-options reports it)
    loops = {k for k in loops if any(k in p.loop_options for p in ordered)}

    def missing(p: VersionProfile) -> list[str]:
        gone = sorted(f"pypto.{n}" for n in names if n not in p.api)
        return (gone + sorted(f"jit {k}=" for k in keywords if k not in p.jit_options)
                + sorted(f"pypto.loop {k}=" for k in loops if k not in p.loop_options))

    if not missing(base):
        return Inferred(base, f"pypto {base.pypto}: nothing it uses is newer")
    fits = [p for p in ordered if not missing(p)]
    if fits:
        chosen = fits[0]
        newer = missing(base)[:_SHOWN]
        return Inferred(chosen, f"pypto {chosen.pypto}: it uses {', '.join(newer)}, which {base.pypto} lacks")
    chosen = min(reversed(ordered), key=lambda p: len(missing(p)))
    return Inferred(chosen, f"pypto {chosen.pypto}: the release that has the most of what it uses")


__all__ = ["AUTO", "Inferred", "infer_release", "used_api", "used_names"]
