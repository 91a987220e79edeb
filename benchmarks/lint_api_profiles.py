"""Generate the lint's per-release API lists (knowledge/default/api/) from PyPTO itself.

    # 0.2.0: the installed wheel's namespace (dir(), no kernel runs)
    .venv/bin/python benchmarks/lint_api_profiles.py installed knowledge/default/api/pypto-0.2.0.txt
    # 0.2.1 / head: PyPTO's sources, read without importing them (they need a native library)
    .venv/bin/python benchmarks/lint_api_profiles.py source /work/pypto-src \\
        knowledge/default/api/pypto-0.2.1.txt --commit <sha> --date <YYYY-MM-DD>

`source` reads `python/pypto/__init__.py` the way Python would build the package's namespace:
`from .m import *` brings `m.__all__`, or else every public top-level name of `m` (its defs,
classes, assignments and the names it imports); `from .m import a, b` brings a and b; every
submodule of the package is an attribute too (`pypto.error`, `pypto.distributed`). The namespaces
`frontend` and `experimental` are listed member by member (`frontend.jit`). The jit decorator's
keywords are read from the signature of `frontend`'s `jit`. The header records where, at which
commit and on which date the list was read, so a later regeneration can be compared.
"""

from __future__ import annotations

import argparse
import ast
import subprocess
import sys
from pathlib import Path

NAMESPACES = ("frontend", "experimental")

_DIR_SCRIPT = """
import pypto
names = [n for n in dir(pypto) if not n.startswith("_")]
for ns in ("frontend", "experimental"):
    names += [f"{ns}.{n}" for n in dir(getattr(pypto, ns)) if not n.startswith("_")]
print("\\n".join(sorted(names)))
"""


class Package:
    """The namespace of a package read from its source files, never imported."""

    def __init__(self, root: Path) -> None:
        self.root = root  # the folder of the top package (…/python/pypto)
        self._seen: dict[Path, set[str]] = {}

    def module_file(self, dotted: str) -> Path | None:
        """`op.math` -> op/math.py or op/math/__init__.py."""
        base = self.root.joinpath(*dotted.split(".")) if dotted else self.root
        for cand in (base.with_suffix(".py"), base / "__init__.py"):
            if cand.is_file():
                return cand
        return None

    def namespace(self, dotted: str = "") -> set[str]:
        """The public names `import pypto.<dotted>` gives, as far as the source shows."""
        file = self.module_file(dotted)
        if file is None:
            return set()
        if file in self._seen:
            return self._seen[file]
        self._seen[file] = set()  # guards an import cycle
        tree = ast.parse(file.read_text(encoding="utf-8"))
        names: set[str] = set()
        explicit = _dunder_all(tree)
        package = dotted if file.name == "__init__.py" else dotted.rpartition(".")[0]
        for node in tree.body:
            names |= self._bound(node, package)
        if file.name == "__init__.py":  # every submodule is an attribute once imported
            folder = file.parent
            names |= {p.stem for p in folder.glob("*.py") if p.stem != "__init__"}
            names |= {p.name for p in folder.iterdir() if (p / "__init__.py").is_file()}
        result = set(explicit) if explicit is not None else names
        self._seen[file] = result
        return result

    def _bound(self, node: ast.stmt, package: str) -> set[str]:
        out: set[str] = set()
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            out.add(node.name)
        elif isinstance(node, ast.Assign):
            for t in node.targets:
                out |= {n.id for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            out.add(node.target.id)
        elif isinstance(node, ast.Import):
            for a in node.names:
                out.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            source = _resolve(node, package)
            for a in node.names:
                if a.name == "*":
                    if source is not None:
                        out |= self.namespace(source)
                else:
                    out.add(a.asname or a.name)
        elif isinstance(node, ast.If | ast.Try):  # `try: from .x import y` / version guards
            for body in (getattr(node, "body", []), getattr(node, "orelse", []),
                         *(h.body for h in getattr(node, "handlers", []))):
                for sub in body:
                    out |= self._bound(sub, package)
        return {n for n in out if not n.startswith("_")}


def _dunder_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            try:
                value = ast.literal_eval(node.value)
            except ValueError:
                return None
            return [str(v) for v in value]
    return None


def _resolve(node: ast.ImportFrom, package: str) -> str | None:
    """The package-relative module an ImportFrom names (None for an outside package)."""
    if node.level == 0:
        mod = node.module or ""
        if mod == "pypto" or mod.startswith("pypto."):
            return mod[len("pypto."):] if mod != "pypto" else ""
        return None
    parts = package.split(".") if package else []
    up = node.level - 1
    if up > len(parts):
        return None
    base = parts[: len(parts) - up] if up else parts
    tail = node.module.split(".") if node.module else []
    return ".".join([*base, *tail])


def from_source(src: Path) -> tuple[list[str], list[str]]:
    """(the API names, the jit keywords) of the PyPTO checkout at `src`."""
    pkg = Package(src / "python" / "pypto")
    names = pkg.namespace("")
    for ns in NAMESPACES:
        names |= {f"{ns}.{n}" for n in pkg.namespace(ns)}
    return sorted(names), _jit_keywords(pkg)


def _jit_keywords(pkg: Package) -> list[str]:
    for file in sorted((pkg.root / "frontend").rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.FunctionDef) and node.name == "jit":
                return sorted(a.arg for a in node.args.kwonlyargs)
    return []


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    inst = sub.add_parser("installed", help="the installed pypto's namespace (imports it in a child process)")
    inst.add_argument("out", type=Path)
    srcp = sub.add_parser("source", help="a checkout of PyPTO's repository, read without importing it")
    srcp.add_argument("src", type=Path)
    srcp.add_argument("out", type=Path)
    srcp.add_argument("--commit", required=True, help="the commit the checkout is at")
    srcp.add_argument("--date", required=True, help="the commit's date (YYYY-MM-DD)")
    srcp.add_argument("--release", default="0.2.1", help="the release this list stands for")
    args = ap.parse_args()

    if args.mode == "installed":
        out = subprocess.run([sys.executable, "-c", _DIR_SCRIPT], capture_output=True, text=True, timeout=300,
                             check=True).stdout.split()
        head = ["# Every name under `pypto.` in the installed pypto wheel, read with dir() (no kernel run):",
                "# `pypto.X` is listed as X; `pypto.frontend.Y` / `pypto.experimental.Y` as frontend.Y /",
                "# experimental.Y. Generated by benchmarks/lint_api_profiles.py installed; compared by",
                "# tests/lint/test_api_lists.py (sim)."]
        names = sorted(set(out))
    else:
        names, jit = from_source(args.src)
        head = [f"# Every name under `pypto.` in pypto {args.release}, read from PyPTO's public sources (hicann/pypto",
                f"# at commit {args.commit}, {args.date}): python/pypto/__init__.py, enum.py and the submodules",
                "# they import, without importing them. Generated by benchmarks/lint_api_profiles.py source.",
                f"# jit keywords there: {', '.join(jit)}"]
    if args.out.exists() and args.out.read_text(encoding="utf-8").splitlines()[len(head):] == names:
        print(f"{args.out}: unchanged ({len(names)} names)")
        return
    args.out.write_text("\n".join([*head, *names]) + "\n", encoding="utf-8")
    print(f"{args.out}: {len(names)} names")


if __name__ == "__main__":
    main()
