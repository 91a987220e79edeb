"""The compiler's check of every pass: read pass-verify's rows and decide whether they cover all
the passes the knowledge pack expects.

With pass-verify on and the default pass filter, pypto 0.2.0's interpreter computes the tensor
graph (the values it writes into the out tensors, which the worker compares with torch) and then
the graph after each compiler pass, and writes one row per pass, per function, loop iteration and
output to `<out>/output_*/verify_*/verify_result_brief.csv`, each compared with the tensor graph.
The file is only complete when the worker process has exited, so the runner reads it afterwards.

Two measured traps decide the rules here (research note pypto-0.2.0-ops, rule
V020.every-pass-verified): a pass can be wrong where the tensor graph is right (a broadcast
arange mask, wrong after Pass_28), and a pass can drop its row without any error (pypto.sign: no
row at all). So a verification needs the reference stage to match torch AND, at every place the
interpreter checked, a PASS row for every expected pass; a missing row is not a pass.

Pure: the csv module and the file system, nothing from pypto.
"""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pypto_tui.examples import ex, examples
from pypto_tui.findings import Finding, cites
from pypto_tui.sim import jobs as J

BRIEF_CSV = "verify_result_brief.csv"
BRIEF_GLOB = f"output_*/verify_*/{BRIEF_CSV}"
MAX_FILES = 256
MAX_BYTES = 64 * 1024 * 1024
PASSED = "PASS"
# What a verify result (and the report built from it) says about the passes: the same keys in both.
PASS_FIELDS = ("passes_expected", "passes_checked", "missing_passes", "first_failing_pass", "pass_rows")
MAX_LOG_BYTES = 8 * 1024 * 1024
# plog: "... FB4001! VerifyPass failed for function F, pass CodegenPreproc (passIndex: 36, ...): ..., COPY_INOpError"
_UNRUNNABLE = re.compile(r"VerifyPass failed for function \S+, pass (\w+) \(passIndex: (\d+)[^\n]*?(\w+?)OpError")


@dataclass(frozen=True, slots=True)
class PassRow:
    """One comparison: pass `name` at one place (`site`) against the tensor graph."""

    site: tuple[str, str, str, str]  # (csv file, function, loop iteration, output)
    name: str
    result: str
    max_abs_diff: float | None = None
    error_count: int | None = None

    @property
    def passed(self) -> bool:
        return self.result.upper() == PASSED


@dataclass
class PassCheck:
    """What pass-verify said, against what the pack expects (`expected` holds the reference stage
    first, then the passes in pipeline order)."""

    expected: list[str]
    checked: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    first_failing: str | None = None
    verified: bool = False
    reason: str = ""
    rows: int = 0
    sites: int = 0
    findings: list[Finding] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if k != "findings"}


def _number(text: str | None, kind: type) -> Any:
    try:
        value = float(text or "")
    except ValueError:
        return None
    return int(value) if kind is int else value


def parse_brief(text: str, file_id: str) -> list[PassRow]:
    """The rows of one brief CSV (unknown columns ignored, rows without a pass name skipped)."""
    rows = []
    for r in csv.DictReader(io.StringIO(text)):
        name = (r.get("passName") or "").strip()
        if not name:
            continue
        site = (file_id, r.get("verifyType") or "", r.get("loopInfo") or "", r.get("ioflag") or "")
        rows.append(PassRow(site, name, (r.get("verifyResult") or "").strip(),
                            _number(r.get("maxAbsDiff"), float), _number(r.get("errorCount"), int)))
    return rows


def read_rows(out_dir: Path) -> tuple[list[PassRow], int]:
    """Every pass row under a worker's output folder, and how many brief files held them.
    Bounded: at most MAX_FILES files and MAX_BYTES read in all (the dumps can be gigabytes, the
    brief files are small)."""
    files = sorted(Path(out_dir).glob(BRIEF_GLOB))[:MAX_FILES]
    rows: list[PassRow] = []
    budget = MAX_BYTES
    for i, f in enumerate(files):
        try:
            with f.open("rb") as fh:
                data = fh.read(budget)
        except OSError:
            continue
        budget -= len(data)
        rows += parse_brief(data.decode("utf-8", errors="replace"), str(i))
        if budget <= 0:
            break
    return rows, len(files)


def unrunnable_passes(log_dir: Path) -> dict[str, str]:
    """Passes whose graph the interpreter could not run (plog FB4001), with the op it stopped at:
    why a pass left no row. Pass names as in the brief CSV (Pass_36_CodegenPreproc)."""
    out: dict[str, str] = {}
    budget = MAX_LOG_BYTES
    for f in sorted(Path(log_dir).rglob("*.log")):
        if budget <= 0:
            break
        try:
            with f.open("rb") as fh:
                text = fh.read(budget).decode("utf-8", errors="replace")
        except OSError:
            continue
        budget -= len(text)
        for m in _UNRUNNABLE.finditer(text):
            out.setdefault(f"Pass_{int(m.group(2)):02d}_{m.group(1)}", m.group(3))
    return out


def _first_failure(rows: Sequence[PassRow], order: Sequence[str]) -> PassRow | None:
    failed = [r for r in rows if not r.passed]
    if not failed:
        return None
    rank = {n: i for i, n in enumerate(order)}
    return min(failed, key=lambda r: (rank.get(r.name, len(rank)), r.site))


def _where(row: PassRow) -> str:
    _file, function, loop, output = row.site
    bits = [b for b in (function, loop and f"iteration {loop}", output) if b]
    return f" ({', '.join(bits)})" if bits else ""


RULE = "V020.every-pass-verified"
VALUES_RULE = "V020.allclose-every-element"  # the reference stage against torch, every element
_ROW = ("k.csv", "kernel", "", "out")
_ALL = ("Pass_04", "Pass_36")


def _rows(*results: tuple[str, str]) -> list[PassRow]:
    return [PassRow(_ROW, name, result) for name, result in results]


@cites(RULE, VALUES_RULE)
@examples(valid=[ex(rows=_rows(("Pass_04", "PASS"), ("Pass_36", "PASS")), files=1, launches=1, passes=_ALL,
                    reference="tensor_graph", reference_ok=True)],
          invalid=[ex(rows=_rows(("Pass_04", "PASS"), ("Pass_36", "FAIL")), files=1, launches=1, passes=_ALL,
                      reference="tensor_graph", reference_ok=True, message="compiler pass Pass_36 is wrong"),
                   ex(rows=_rows(("Pass_04", "PASS")), files=1, launches=1, passes=_ALL, reference="tensor_graph",
                      reference_ok=True, message="a missing row is not a pass"),
                   ex(rows=_rows(("Pass_04", "PASS"), ("Pass_36", "PASS")), files=1, launches=1, passes=_ALL,
                      reference="tensor_graph", reference_ok=False, message="does not match the torch baseline",
                      rule=VALUES_RULE)])
def check_passes(rows: Sequence[PassRow], files: int, launches: int, passes: Sequence[str], reference: str,
                 reference_ok: bool | None, unrunnable: Mapping[str, str] | None = None) -> PassCheck:
    """The verdict over every stage: `reference_ok` is the worker's own comparison of the
    reference stage (the values in the out tensors) with torch (None: it did not run); `launches`
    is how many kernel calls the worker made, each of which must have written its rows;
    `unrunnable` says which passes the interpreter could not run, and at which op."""
    check = PassCheck(expected=[reference, *passes], rows=len(rows))
    sites: dict[tuple[str, str, str, str], set[str]] = {}
    for r in rows:
        sites.setdefault(r.site, set()).add(r.name)
    check.sites = len(sites)
    if reference_ok is not None:
        check.checked.append(reference)
    present_everywhere = [p for p in passes if sites and all(p in names for names in sites.values())]
    check.checked += present_everywhere
    check.missing = [p for p in passes if p not in present_everywhere]
    if launches > files:
        check.missing = list(passes)
    worst = _first_failure(rows, passes)
    if reference_ok is False:
        check.first_failing = reference
        check.reason = f"{reference} (the interpreter's values) does not match the torch baseline"
    elif worst is not None:
        check.first_failing = worst.name
        diff = f", max abs diff {worst.max_abs_diff:g}" if worst.max_abs_diff is not None else ""
        count = f"{worst.error_count} element(s) differ" if worst.error_count is not None else "it differs"
        check.reason = (f"compiler pass {worst.name} is wrong: {count} from {reference}{diff}{_where(worst)}; "
                        f"the values before it were right")
    elif not passes:
        check.reason = "the knowledge pack lists no compiler passes to check (passes.toml): nothing verified them"
    elif not rows:
        check.reason = (f"pass-verify wrote no pass rows ({len(passes)} expected per function, loop iteration "
                        f"and output){_why(check.missing, unrunnable)}: the compiler's passes were not checked, "
                        "so this is not a pass")
    elif check.missing:
        short = sum(1 for names in sites.values() if not set(passes) <= names)
        where = f"at {short} of {len(sites)} checked place(s)" if short else f"for {launches - files} kernel call(s)"
        check.reason = (f"pass-verify has no row for {', '.join(check.missing)} {where}"
                        f"{_why(check.missing, unrunnable)}: a missing row is not a pass")
    check.verified = bool(reference_ok) and bool(passes) and bool(rows) and not check.missing \
        and check.first_failing is None
    if check.verified:
        check.reason = f"{reference} matches torch and all {len(passes)} compiler passes agree with it"
    else:
        rule = VALUES_RULE if reference_ok is False else RULE
        check.findings.append(Finding(rule, "error", check.reason or "not verified", "compiler"))
    return check


def _why(missing: Sequence[str], unrunnable: Mapping[str, str] | None) -> str:
    ops = [f"{p} at op {unrunnable[p]}" for p in missing if unrunnable and p in unrunnable]
    return f" (the interpreter could not run {', '.join(ops)})" if ops else ""


def fold_into(result: J.SimResult, check: PassCheck) -> None:
    """Record the pass check on a verify result; a kernel whose values matched torch but whose
    passes did not all say PASS is not verified (MISMATCH for a failing pass, UNVERIFIED for a
    missing one)."""
    result.passes_expected = list(check.expected)
    result.passes_checked = list(check.checked)
    result.missing_passes = list(check.missing)
    result.first_failing_pass = check.first_failing
    result.pass_rows = check.rows
    if result.status != J.OK:
        return
    if check.verified:
        result.passed = True
        return
    result.passed = False
    result.status = J.MISMATCH if check.first_failing else J.UNVERIFIED
    result.reason = check.reason
