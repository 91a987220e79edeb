"""Issue 24's recall measurement as a test: each classic pitfall planted one at a time in the
correct expert kernels (tests/lint/expert/) must be named by its rule at its severity, by default
and with --strict, and the rule must be silent on the kernel before the plant.

The plants live in benchmarks/lint_recall.py (which prints the caught / planted table); this runs
every one of them, so a rule that stops firing on one kernel's idiom fails here by name.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from pypto_tui.kb import get_kb
from pypto_tui.lint import format_finding, lint_source

_SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "lint_recall.py"


def _load():  # type: ignore[no-untyped-def]
    spec = importlib.util.spec_from_file_location("lint_recall", _SCRIPT)
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["lint_recall"] = mod  # dataclasses look their module up by name
    spec.loader.exec_module(mod)
    return mod


recall = _load()
KB = get_kb()
CASES = [(stem, name) for stem, plants in recall.PLANTS.items() for name in plants]


def test_every_pitfall_of_the_issue_is_planted_in_several_kernels() -> None:
    counts = {name: sum(name in plants for plants in recall.PLANTS.values()) for name in recall.PITFALLS}
    # the issue planted the cube tile in eight kernels; the unified buffer fits only where a tile can
    # outgrow it without outgrowing its tensor
    assert counts["cube tile not a multiple of 16"] >= 8, counts
    assert all(n >= 4 for name, n in counts.items() if name != "tile over the unified buffer"), counts
    assert set(counts) == set(recall.PITFALLS) and min(counts.values()) >= 1
    assert set(recall.PLANTS) == {p.stem for p in recall.EXPERT.glob("*.py")}


@pytest.mark.parametrize(("stem", "pitfall"), CASES, ids=[f"{s}-{p.replace(' ', '_')}" for s, p in CASES])
def test_a_planted_pitfall_is_caught_at_its_severity(stem: str, pitfall: str) -> None:
    want = recall.PITFALLS[pitfall]
    path = recall.EXPERT / f"{stem}.py"
    clean = path.read_text(encoding="utf-8")
    broken = recall.PLANTS[stem][pitfall](clean)
    assert broken != clean

    def levels(src: str, strict: bool) -> set[str]:
        return {f.level for f in lint_source(src, str(path), KB, pypto="auto", strict=strict) if f.rule in want.rules}

    assert levels(clean, strict=True) == set(), "the rule already fires on the correct kernel"
    default = levels(broken, strict=False)
    shown = "\n".join(format_finding(f) for f in lint_source(broken, str(path), KB, pypto="auto"))
    if want.level == "strict":
        assert default == set(), shown
    else:
        assert want.level in default, shown
    assert want.strict_level in levels(broken, strict=True), shown


def test_a_plant_whose_text_is_gone_says_so() -> None:
    with pytest.raises(recall.PlantError, match="occurs 0 times"):
        recall.edits(("no such text", "x"))("import pypto\n")
    with pytest.raises(recall.PlantError, match="no pypto.loop"):
        recall.nest_first_loop("import pypto\n")


def test_nesting_keeps_the_body_and_adds_one_loop() -> None:
    src = "def k(x):\n    for i in pypto.loop(4):\n        a = 1\n\n        b = 2\n    c = 3\n"
    out = recall.nest_first_loop(src)
    assert out == ("def k(x):\n    for outer in pypto.loop(1):\n        for i in pypto.loop(4):\n"
                   "            a = 1\n\n            b = 2\n    c = 3\n")
