"""The lint on kernels written the way PyPTO's own authors write them (tests/lint/expert/).

Seventeen correct kernels (dynamic rows with valid_shape, loop_unroll factors in view shapes, nested
block loops, cube tiles with a 3-entry k, helpers that set the tile, an in-kernel reshape with
valid_shape, `[DYNAMIC, ...]` shapes, a whole-axis inner tile, a tile shared across shapes, sizes
from `x.shape`; and seven more matmuls: B or A read transposed, a batch loop, a K-chunk loop that
accumulates in the output, a loop over weight rows, a rank-4 attention score, vector epilogues with
a broadcast bias) must lint clean for both releases; each broken twin in expert/broken/ must be
caught with the rule its header names (`# expert-set: expect=RULE [pypto=RELEASE]`), and a twin
of a release-specific trap must be quiet for the other release. `test_expert_set_compiler.py`
checks on the real compiler that the correct ones verify and the twins really fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pypto_tui.kb import get_kb
from pypto_tui.lint import format_finding, lint_paths
from pypto_tui.lint.profile import lint_settings

KB = get_kb()
EXPERT = Path(__file__).parent / "expert"
GOOD = sorted(EXPERT.glob("*.py"))
BROKEN = sorted((EXPERT / "broken").glob("*.py"))
RELEASES = tuple(lint_settings(KB).profiles)
_HEADER = re.compile(r"^# expert-set: (.*)$", re.M)


def header(path: Path) -> dict[str, str]:
    found = _HEADER.search(path.read_text(encoding="utf-8"))
    assert found, f"{path.name} has no '# expert-set:' line"
    return dict(part.split("=", 1) for part in found.group(1).split())


def _show(findings: list) -> str:
    return "\n".join(format_finding(f) for f in findings) or "(no findings)"


def test_the_set_is_complete() -> None:
    assert len(GOOD) == 17 and len(BROKEN) >= 23
    twins = {p.stem.split("__")[0] for p in BROKEN}
    assert twins == {p.stem for p in GOOD}, "every correct kernel has at least one broken twin"


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("path", GOOD, ids=[p.stem for p in GOOD])
def test_correct_kernels_lint_clean(path: Path, release: str) -> None:
    findings = lint_paths([path], KB, pypto=release)
    assert findings == [], _show(findings)


@pytest.mark.parametrize("path", BROKEN, ids=[p.stem for p in BROKEN])
def test_broken_twins_are_caught(path: Path) -> None:
    meta = header(path)
    release = meta.get("pypto", "0.2.0")
    findings = lint_paths([path], KB, pypto=release)
    hits = [f for f in findings if f.rule == meta["expect"]]
    assert hits, _show(findings)
    rule = KB.rules[meta["expect"]]
    assert {f.level for f in hits} == {lint_settings(KB).level(rule, False)}
    # every finding of a twin is one of: its defect, or a style warning the edit also causes
    assert all(f.rule == meta["expect"] or f.level != "error" for f in findings), _show(findings)


@pytest.mark.parametrize("path", [p for p in BROKEN if "pypto" in header(p)], ids=lambda p: p.stem)
def test_release_specific_traps_are_quiet_for_the_other_release(path: Path) -> None:
    meta = header(path)
    others = [r for r in RELEASES if r != meta["pypto"]]
    assert others
    for release in others:
        findings = lint_paths([path], KB, pypto=release)
        assert not [f for f in findings if f.rule == meta["expect"]], (release, _show(findings))
