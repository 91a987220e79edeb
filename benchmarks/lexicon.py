"""How many lines outside the registry name an operator: the lexicon the registry should be alone in.

    python benchmarks/lexicon.py [--top N] [--files]

A line counts when it holds a string literal that is a registry kind's name or one of its spellings
(a torch function, a tensor method, an nn module type), in a module of `pypto_tui` outside
`pypto_tui/ops/` (the registry) and `pypto_tui/codegen/patterns/` (an anchor's own pattern). Docstrings
and comments are not code: only string tokens outside them count.
"""

from __future__ import annotations

import argparse
import io
import sys
import tokenize
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

EXCLUDED = ("pypto_tui/ops/", "pypto_tui/codegen/patterns/", "pypto_tui/knowledge/", "pypto_tui/screens/")
GENERIC = frozenset({"view", "float", "expand", "size", "shape", "t", "T", "type", "to", "abs", "round", "max", "min",
                     "all", "any", "norm", "sum", "mean", "where", "dim", "add", "sub", "mul", "div", "neg", "pow"})
"""Names that are also ordinary words of the code (dict keys, attribute names): counted only when the
whole literal is the name and the line also calls the registry's vocabulary (kept out to stay honest
about what a reader would call an operator list)."""


def vocabulary() -> set[str]:
    from pypto_tui.ops.registry import REGISTRY

    words: set[str] = set()
    for k in REGISTRY.values():
        words.add(k.name)
        words.update(k.functions, k.methods, k.modules)
    return {w for w in words if len(w) > 1}


def role_words() -> set[str]:
    """The roles and contract families (conv, norm, softmax, matmul, ...): a kind of kernel, which some kinds
    share as a name."""
    from pypto_tui.ops.base import ROLES
    from pypto_tui.vocabulary import FAMILIES

    return set(ROLES) | set(FAMILIES)


def lines_naming(path: Path, words: set[str], named: dict[int, set[str]] | None = None) -> set[int]:
    """The lines of `path` with a string literal in `words`; `named`, when given, collects each line's."""
    out: set[int] = set()
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(path.read_text(encoding="utf-8")).readline))
    except (tokenize.TokenError, SyntaxError):
        return out
    prev_significant = None
    for tok in tokens:
        if tok.type == tokenize.STRING:
            is_doc = prev_significant in (None, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT) and \
                tok.string.lstrip("rbuRBU").startswith(('"""', "'''"))
            if not is_doc:
                text = tok.string.lstrip("rbufRBUF").strip("\"'")
                if text in words:
                    out.add(tok.start[0])
                    if named is not None:
                        named.setdefault(tok.start[0], set()).add(text)
        if tok.type not in (tokenize.NL, tokenize.COMMENT):
            prev_significant = tok.type
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--top", type=int, default=15)
    ap.add_argument("--files", action="store_true", help="list the files and their counts")
    args = ap.parse_args()
    words, roles = vocabulary(), role_words()
    counts: Counter[str] = Counter()
    only_roles = 0
    for path in sorted((ROOT / "pypto_tui").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if any(rel.startswith(e) for e in EXCLUDED):
            continue
        named: dict[int, set[str]] = {}
        n = len(lines_naming(path, words, named))
        only_roles += sum(1 for found in named.values() if found <= roles)
        if n:
            counts[rel] = n
    total = sum(counts.values())
    print(f"{total} lines in {len(counts)} files outside pypto_tui/ops and pypto_tui/codegen/patterns name an operator")
    print(f"  of which {only_roles} name only a role or family that is also a kind's name (conv, norm, softmax, "
          f"matmul, ...): {total - only_roles} name an operator")
    for rel, n in counts.most_common(args.top if not args.files else None):
        print(f"{n:5d}  {rel}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
