"""How many models of a folder the traced front end turns into an OpGraph without problems, and how long.

    .venv/bin/python benchmarks/trace_models.py /tmp/kb/KernelBench/level3 [--timeout 240] [--jsonl OUT]
        [--modules DIR]

One model at a time (torch.export of a large model takes minutes on two shared cores): each is traced in
the task runner (`pypto_tui.trace.tracer.trace_task`: its own process group, the timeout, the memory
cap; a cached trace is read back), then converted (`contract.aten.graph_from_trace`). One JSON line per
model (status, seconds of export and decomposition, node count, problems), then the totals. With
`--modules DIR`, each traced model is also scaffolded (`scaffold --front-end traced`, the same path) into
DIR and its module linted: the row gains the kernel count, the refusal and the lint findings, and the
totals how many models get a lint-clean module.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("folder", type=Path)
    ap.add_argument("--timeout", type=float, default=240.0)
    ap.add_argument("--jsonl", type=Path)
    ap.add_argument("--no-cache", action="store_true")
    ap.add_argument("--modules", type=Path, help="scaffold each traced model into this folder and lint it")
    args = ap.parse_args(argv)
    from pypto_tui.contract.aten import graph_from_trace
    from pypto_tui.kb import bundled_pack_dir, get_kb
    from pypto_tui.trace.tracer import pack_id, trace_task

    pack = pack_id(get_kb(bundled_pack_dir()))
    rows = []
    out = args.jsonl.open("a") if args.jsonl else None
    for task in sorted(args.folder.glob("*.py"), key=lambda p: (len(p.name.split("_")[0]), p.name)):
        t0 = time.monotonic()
        t = trace_task(task, pack=pack, timeout=args.timeout, use_cache=not args.no_cache)
        row: dict[str, object] = {"task": task.name, "status": t.status, "cached": t.cached,
                                  "wall_s": round(time.monotonic() - t0, 1)}
        if t.ok:
            c0 = time.monotonic()
            g = graph_from_trace(t.data)
            row.update(seconds=t.data.get("seconds"), aten_nodes=len(t.data.get("nodes", [])), nodes=len(g.nodes),
                       problems=len(g.problems), first_problems=list(g.problems[:3]),
                       convert_s=round(time.monotonic() - c0, 2))
            if args.modules is not None:
                row.update(_module_row(task, args.modules))
        else:
            row["message"] = t.message[:300]
        rows.append(row)
        line = json.dumps(row)
        print(line, flush=True)
        if out:
            out.write(line + "\n")
            out.flush()
    clean = [r for r in rows if r["status"] == "ok" and r.get("problems") == 0]
    traced = [r for r in rows if r["status"] == "ok"]
    totals = {"models": len(rows), "traced": len(traced), "graph_without_problems": len(clean),
              "timeouts": sum(r["status"] == "timeout" for r in rows)}
    if args.modules is not None:
        totals.update(modules=sum(bool(r.get("module")) for r in rows),
                      lint_clean=sum(bool(r.get("module")) and r.get("lint") == 0 for r in rows))
    print(json.dumps(totals))
    return 0


def _module_row(task: Path, folder: Path) -> dict[str, object]:
    """The traced model's module: written (kernels, seconds from the cached trace to the module) or
    refused (the one-line reason), and linted with the release's profile."""
    from pypto_tui.design import Design, Pipeline, kernel_of, task_kernels
    from pypto_tui.errors import InputError, Unsupported
    from pypto_tui.kb import get_kb
    from pypto_tui.lint.engine import lint_source

    t0 = time.monotonic()
    try:
        p = Pipeline(get_kb(None), Design(task=str(task), front_end="traced"))
        found = task_kernels(p)
        k = kernel_of(p)
    except (InputError, Unsupported, ValueError) as exc:
        return {"module": False, "refused": str(exc)[:200]}
    if not k.supported:
        why = found.reason or k.reason
        return {"module": False, "refused": why[:200], "module_s": round(time.monotonic() - t0, 1)}
    folder.mkdir(parents=True, exist_ok=True)
    (folder / task.name).write_text(k.source, encoding="utf-8")
    findings = lint_source(k.source, task.name, kb=get_kb(None))
    return {"module": True, "kernels": len(found.kernels), "module_s": round(time.monotonic() - t0, 1),
            "lint": len(findings), "first_lint": [f"{f.rule}: {f.message}"[:160] for f in findings[:2]]}


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
