"""The lint's settings from the pack's lint.toml: version profiles, rules by release, style levels.

A kernel is right or wrong for one PyPTO release: 0.2.0 refuses `@pypto.jit`, builtin `min()` of a
loop index and `pypto.cond`; 0.2.1 accepts them. `LintSettings` says what each release has (its
API names and jit keywords), which rules hold for which release, and at what level a rule is
reported: a pack's rule severity, except for the rule documents' style rules, which the lint
reports as warnings (or not at all) unless strict mode raises them back.

The release defaults to the installed pypto's version, read from its package metadata (pypto
itself is never imported), else the pack's fallback. A pack without lint.toml uses the bundled
default's; a broken lint.toml is a PackError naming the file, the key and the reason.
"""

from __future__ import annotations

import importlib.metadata
from collections.abc import Mapping
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from pypto_tui.errors import InputError
from pypto_tui.kb import BUNDLED_ROOT, SEVERITIES, KnowledgeBase, Rule, _read_toml, _Reader

FILE = "lint.toml"
LEVELS = (*SEVERITIES, "off")


@dataclass(frozen=True, slots=True)
class VersionProfile:
    """What one PyPTO release has: its `pypto.` names and the keywords its jit decorator and its
    loops act on."""

    pypto: str
    source: str
    api: frozenset[str]
    jit_options: frozenset[str]
    loop_options: frozenset[str]
    note: str


@dataclass(frozen=True, slots=True)
class StyleLevel:
    rule: str
    level: str
    strict: str
    why: str


@dataclass(frozen=True)
class LintSettings:
    path: Path
    fallback: str
    pypto: str
    strict: bool
    profiles: Mapping[str, VersionProfile]
    versions: Mapping[str, tuple[str, ...]]
    style: Mapping[str, StyleLevel]
    hints: Mapping[str, str]

    def profile(self, name: str | None = None) -> VersionProfile:
        """The profile for `name`, else the pack's setting, the installed pypto's, the fallback."""
        key = name or self.pypto or matching_profile(installed_pypto(), self.profiles) or self.fallback
        try:
            return self.profiles[key]
        except KeyError:
            known = ", ".join(self.profiles)
            raise InputError(f"no lint profile for pypto {key}: use --pypto with one of {known}") from None

    def applies(self, rule_id: str, release: str) -> bool:
        releases = self.versions.get(rule_id)
        return releases is None or release in releases

    def level(self, rule: Rule | None, strict: bool) -> str:
        """The level a finding of `rule` is reported at ('off': not reported)."""
        if rule is None:
            return "error"
        style = self.style.get(rule.id)
        if style is None:
            return rule.severity
        return style.strict if strict else style.level


@lru_cache(maxsize=1)
def installed_pypto() -> str | None:
    """The installed pypto's version from its package metadata (pypto is not imported); read once
    per process."""
    try:
        return importlib.metadata.version("pypto")
    except importlib.metadata.PackageNotFoundError:
        return None
    except Exception:  # a broken install must not stop the lint
        return None


def matching_profile(version: str | None, profiles: Mapping[str, VersionProfile]) -> str | None:
    """The profile of `version`, or of the newest release before it (a 0.2.0.post1 is a 0.2.0)."""
    if version is None:
        return None
    if version in profiles:
        return version
    want = release_key(version)
    older = [p for p in profiles if release_key(p) <= want]
    return max(older, key=release_key) if older else None


def release_key(v: str) -> tuple[int, ...]:
    """(0, 2, 0) for '0.2.0', '0.2.0rc1' and '0.2.0.post1': the leading numbers of the version."""
    out = []
    for part in v.split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        out.append(int(digits))
        if len(digits) != len(part):
            break
    return tuple(out)


def lint_settings(kb: KnowledgeBase) -> LintSettings:
    """The settings of `kb`'s lint.toml (or the bundled default's), read once per file."""
    own = Path(kb.path) / FILE
    path = own if own.is_file() else BUNDLED_ROOT / "default" / FILE
    try:
        stamp = path.stat().st_mtime
    except OSError:
        stamp = 0.0
    # the bundled file's profiles cite the bundled pack's sources, which a pack of one's own may lack
    sources = frozenset(kb.sources) if path == own else None
    return _load(str(path), stamp, sources, frozenset(kb.rules))


@lru_cache(maxsize=8)
def _load(path: str, stamp: float, sources: frozenset[str] | None, rules: frozenset[str]) -> LintSettings:
    root = Path(path).parent
    r = _Reader(FILE, _read_toml(Path(path)))
    head = r.sub("lint")
    profiles: dict[str, VersionProfile] = {}
    for item in r.array("profile"):
        name = item.text("pypto")
        source = item.text("source")
        if sources is not None and source not in sources:
            raise item.fail("source", f"'{source}' is not a [[source]] id in pack.toml")
        names: set[str] = set()
        for rel in item.strs("api"):
            names |= _api_names(root / rel, item, rel)
        profiles[name] = VersionProfile(name, source, frozenset(names), frozenset(item.strs("jit_options")),
                                        frozenset(item.strs("loop_options")), item.text("note", required=False))
    if not profiles:
        raise r.fail("profile", "a lint.toml needs at least one [[profile]]")
    fallback = head.text("fallback")
    if fallback not in profiles:
        raise head.fail("fallback", f"'{fallback}' is not a [[profile]] ({', '.join(profiles)})")
    pinned = head.text("pypto", required=False)
    if pinned and pinned not in profiles:
        raise head.fail("pypto", f"'{pinned}' is not a [[profile]] ({', '.join(profiles)})")
    versions: dict[str, tuple[str, ...]] = {}
    vr = r.sub("versions", required=False)
    for rid in vr.table:
        releases = vr.strs(rid)
        bad = [v for v in releases if v not in profiles]
        if bad:
            raise vr.fail(rid, f"{', '.join(bad)} is not a [[profile]] ({', '.join(profiles)})")
        versions[rid] = releases
    style: dict[str, StyleLevel] = {}
    for item in r.array("style", required=False):
        rid = item.text("rule")
        if rid in rules:  # a pack may leave a rule out: its style entry then has nothing to say
            style[rid] = StyleLevel(rid, item.text("level", choices=LEVELS), item.text("strict", choices=LEVELS),
                                    item.text("why"))
    hr = r.sub("hints", required=False)
    hints = {name: hr.text(name) for name in hr.table}
    return LintSettings(Path(path), fallback, pinned, head.flag("strict", False), profiles, versions, style, hints)


def _api_names(path: Path, item: _Reader, rel: str) -> set[str]:
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise item.fail("api", f"cannot read {rel} ({exc.strerror})") from None
    return {ln.strip() for ln in text.splitlines() if ln.strip() and not ln.lstrip().startswith("#")}


__all__ = ["LintSettings", "StyleLevel", "VersionProfile", "installed_pypto", "lint_settings",
           "matching_profile", "release_key"]
