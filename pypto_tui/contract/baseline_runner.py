"""Run a task file's Model on prepared inputs: the self-check's subprocess (stdlib, numpy, torch).

Invoked by file path (`python baseline_runner.py WORKDIR`), never as `-m pypto_tui...`, so it
imports nothing of pypto-tui. WORKDIR/job.json names the task, the runs (lists of inputs as
.npy files or scalar values) and the seed; the runner writes WORKDIR/result.json and one
out<i>.npy per run. This is the only place a task file is executed, and only on request; whatever
the task starts ends with this process (procgroup.guard_task_runner).
"""

from __future__ import annotations

import importlib.util
import json
import sys
import traceback
from pathlib import Path
from typing import Any


def _last_line(exc: BaseException) -> str:
    text = "".join(traceback.format_exception_only(type(exc), exc)).strip().splitlines()
    return text[-1] if text else type(exc).__name__


def run(workdir: Path) -> dict[str, Any]:
    job = json.loads((workdir / "job.json").read_text())
    try:
        import numpy as np
        import torch
    except Exception as exc:  # ImportError, or a broken install
        return {"status": "no-torch", "message": _last_line(exc), "python": sys.executable}
    torch.set_num_threads(1)
    task = Path(job["task_path"]).resolve()
    try:
        sys.path.insert(0, str(task.parent))
        spec = importlib.util.spec_from_file_location("pypto_tui_selfcheck_task", task)
        if spec is None or spec.loader is None:
            return {"status": "error", "message": f"cannot load {task}"}
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        init = list(module.get_init_inputs()) if hasattr(module, "get_init_inputs") else []
        torch.manual_seed(int(job.get("seed", 0)))
        model = module.Model(*init)
    except Exception as exc:
        return {"status": "error", "message": f"building Model failed: {_last_line(exc)}"}
    outputs = []
    for i, items in enumerate(job["runs"]):
        args: list[Any] = []
        for item in items:
            if item["kind"] == "scalar":
                args.append(item["value"])
                continue
            t = torch.from_numpy(np.load(workdir / item["file"]))
            if item.get("dtype") == "bf16":
                t = t.to(torch.bfloat16)
            args.append(t)
        try:
            with torch.no_grad():
                out = model(*args)
        except Exception as exc:
            return {"status": "error", "message": f"the baseline's forward failed: {_last_line(exc)}", "run": i}
        if isinstance(out, tuple | list):
            return {"status": "error", "message": f"forward returned a {type(out).__name__}, not a tensor"}
        if not torch.is_tensor(out):
            out = torch.tensor(out)
        dtype = str(out.dtype).replace("torch.", "")
        arr = out.detach().cpu()
        if arr.dtype == torch.bfloat16:
            arr = arr.float()
        np.save(workdir / f"out{i}.npy", arr.numpy())
        outputs.append({"file": f"out{i}.npy", "dtype": dtype, "shape": list(out.shape)})
    return {"status": "ok", "outputs": outputs, "torch_version": torch.__version__}


def _guard(workdir: Path) -> None:
    """Tie the task's processes to this one (procgroup.guard_task_runner), loaded by file path:
    this interpreter may not have pypto-tui installed, and procgroup is standard library only."""
    path = Path(__file__).resolve().parents[1] / "procgroup.py"
    spec = importlib.util.spec_from_file_location("pypto_tui_selfcheck_procgroup", path)
    if spec is None or spec.loader is None:  # pragma: no cover - the package is incomplete
        return
    procgroup = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = procgroup  # dataclasses look their module up by name
    spec.loader.exec_module(procgroup)
    procgroup.guard_task_runner(cleanup=[workdir])


def main(argv: list[str]) -> int:
    workdir = Path(argv[1])
    _guard(workdir)
    try:
        result = run(workdir)
    except Exception as exc:  # the runner must always leave a result behind
        result = {"status": "error", "message": f"runner failed: {_last_line(exc)}"}
    (workdir / "result.json").write_text(json.dumps(result))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
