"""Whole suites: every task of a folder through the single-task `verify` or `sim`, in parallel,
with a run history to compare the next run with.

Each task runs as `python -m pypto_tui verify TASK --json ...`, the command a user types, in a
worker process of its own: the verdict is the CLI's, whatever the verification criterion is today,
and its JSON document is the task's record. This package only discovers, schedules and remembers.

Modules, one job each:
- discover: the folder's task files, and the kernel file that goes with each
- task_exec: one task -> one record (runs the CLI in a child process; also what a Dask worker runs)
- capacity: how many tasks may run at once, from the cores, the memory and each task's history
- local_pool: a process pool on this machine, admitted by memory
- dask_pool: the same on a Dask distributed cluster, memory as a worker resource
- history: the SQLite run history (WAL, one writer per process), resume
- meta: what a run records about itself (versions, commit, pack, criterion)
- suite_run: a suite from start to end, whichever pool runs it
- diff: two runs compared
- report: a run as HTML or Markdown
"""
