"""The real compiler on the CPU: compile kernels with pypto 0.2.0 in SIM mode, read the cost
model, and check the kernel's numbers against the torch baseline.

Nothing here imports pypto or torch at module level. They are imported only inside the worker
subprocess (`python -m pypto_tui.sim.worker`), because a compile prints to the raw file
descriptors, writes dump folders, and a failed compile poisons the process it ran in. The parent
side (runner, cache, sweep, compare, swim) is plain Python plus numpy.

Modules, one job each:
- availability: is the [sim] extra installed, and is it the supported pypto? (no imports)
- jobs: the job and result records that cross the process boundary as JSON
- shim: the version-guarded CopyToHost workaround and the calculator-library cache
- swim: the cost-model swim file -> microseconds; plog -> the real compile-error reason
- compare: the count-based, per-dtype tolerance check (numpy only)
- worker: the subprocess entry point
- stages: what a worker is doing now (for the progress displays)
- passes: pass-verify's rows, counted against the pack's passes (a missing row is not a pass)
- cache: results on disk, keyed by what determines them
- runner: many jobs, one subprocess each, in parallel, with a timeout; interrupted, it stops them
- sweep: the documents' guided search over an ordered candidate list
- design_runs: the sweeps over a design's candidates
- scaled, kernel_file, verification: verify a design (at shapes that keep it meaningful) or any
  kernel file against the task's torch baseline
- on_cpu: what an exported module calls in SIM mode (interpret on request, else a clear error)
"""

from __future__ import annotations

from pypto_tui.sim.design_runs import sweep
from pypto_tui.sim.passes import check_passes

CHECKS = {"sim.verify": check_passes}
APPLIES = {"sim.sweep": sweep}
