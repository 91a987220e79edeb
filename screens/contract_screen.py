"""Step 1, the contract (rule P0): what the task computes, as a form the user can correct.

The contract is extracted statically by the core; this form shows every field, highlights the
`unknown` ones (they must be filled to go on), and turns each edit into one entry of
`Design.contract_edits` (a dotted key such as `reduction.axes` or `inputs.x.shape`). The core
re-derives what follows from the edit; a value it refuses is shown under the field and undone.
The self-check (running the baseline on small asymmetric inputs) runs in a thread worker.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.content import Content
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static, Tree

from pypto_tui.contract.conv import window_fields
from pypto_tui.contract.model import Contract
from pypto_tui.contract.selfcheck import SelfCheckResult
from pypto_tui.design import Design, module_plan_of, static_stop
from pypto_tui.errors import InputError
from pypto_tui.screens.base import StepScreen, attempt, describe_error
from pypto_tui.screens.chain_tree import ChainTree
from pypto_tui.screens.commands import TRACE_COMMAND
from pypto_tui.screens.messages import WorkFinished, WorkProgress
from pypto_tui.screens.widgets import Field, FindingsList, RuleExplanation, dims_text
from pypto_tui.shapes import parse_dims
from pypto_tui.vocabulary import FAMILIES

SCALINGS = ("sum", "mean", "batchmean", "none")
SELF_CHECK_TIMEOUT = 60


# ---------------------------------------------------------------------------------- parsers
def parse_shape(text: str) -> list[int]:
    return list(parse_dims(text))


def parse_axes(text: str) -> list[int]:
    text = text.strip().strip("()[]")
    if not text:
        return []
    out = []
    for part in text.replace(" ", ",").split(","):
        if not part:
            continue
        try:
            out.append(int(part))
        except ValueError:
            raise InputError(f"axes '{text}': '{part}' is not a whole number (write them like 2,3)") from None
    return out


def parse_literal(text: str) -> Any:
    """A Python literal (number, bool, tuple, string); bare words are taken as strings."""
    text = text.strip()
    if not text:
        raise InputError("give a value")
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        if text.replace("_", "").replace(".", "").isalnum():
            return text
        raise InputError(f"'{text}' is not a value: write a number, True/False, a tuple or a name") from None


def parse_text(text: str) -> str:
    text = text.strip()
    if not text:
        raise InputError("give a value")
    return text


def parse_bool_word(text: str) -> bool:
    t = text.strip().lower()
    if t in ("yes", "true", "1"):
        return True
    if t in ("no", "false", "0"):
        return False
    raise InputError("answer yes or no")


@dataclass(frozen=True)
class FieldSpec:
    """One editable row: the edit key, its label, how to parse typed text, how to show a value."""

    key: str
    label: str
    parse: Callable[[str], Any]
    show: Callable[[Any], str]
    kind: str = "input"  # input | family | scaling | keepdim | asym
    hint: str = ""


def _show_value(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, list | tuple):
        return ",".join(str(x) for x in v)
    return str(v)


def _get(contract: Any, key: str) -> Any:
    """The contract's current value for an edit key (None when absent)."""
    head, _, rest = key.partition(".")
    if head == "inputs":
        name, _, attr = rest.partition(".")
        inp = contract.input(name)
        return getattr(inp, attr, None) if inp is not None else None
    if head == "reduction":
        red = contract.reduction
        return getattr(red, rest, None) if red is not None else None
    if head in ("init_params", "op_args", "attributes"):
        return dict(getattr(contract, head) or {}).get(rest)
    return getattr(contract, head, None)


def _has_reduction(contract: Any) -> bool:
    """Whether the form shows the reduction rows (hidden for an elementwise op, a matmul, a conv or a pool)."""
    return (contract.reduction is not None or contract.family not in ("elementwise", "matmul", "conv", "pool")
            or any(k.startswith("reduction") for k in contract.unknown))


def _has_direction(contract: Any) -> bool:
    """Whether the form shows the direction row: only where the order of the operands matters (an
    asymmetric op such as a divergence) or the reader left it unknown. A conv showed an empty row
    whose placeholder said "for divergences"."""
    return bool(contract.direction) or contract.asymmetric is not False or "direction" in contract.unknown


def _norm(v: Any) -> Any:
    if isinstance(v, list | tuple):
        return [_norm(x) for x in v]
    return v


def _covered(row_key: str, unknown_key: str) -> bool:
    return (unknown_key == row_key or unknown_key.startswith(row_key + ".")
            or row_key.startswith(unknown_key + "."))


class ContractScreen(StepScreen):
    """The contract form: task, family/op, inputs, init parameters, reduction, semantics."""

    STEP = "contract"
    CSS_PATH = "contract_screen.tcss"
    AUTO_FOCUS = "#form"
    RUN_LABEL = "Self-check the contract against the baseline"
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+r", "run_check", "Self-check", priority=True),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.contract: Any = None
        self.specs: dict[str, FieldSpec] = {}
        self.errors: dict[str, str] = {}
        self._structure: Any = None
        self._loaded_task: tuple[str, str] | None = None  # (task file, front end) the form was read from
        self._form_gen = 0
        self._form_shown = 0
        self.loading = False

    def compose_body(self) -> ComposeResult:
        with Horizontal(id="contract-main"):
            yield VerticalScroll(id="form", classes="panel")
            with Vertical(id="contract-side"):
                yield Static("", id="unknowns", classes="panel")
                yield FindingsList(id="contract-findings", classes="panel")
                yield RuleExplanation(id="contract-explain", classes="panel")

    BUSY_TEXT = "reading the task file (static analysis, nothing is executed)"

    def on_mount(self) -> None:
        self.query_one("#form").border_title = "Contract"
        self.query_one("#unknowns").border_title = "Summary"
        self.query_one("#contract-findings").border_title = "Findings"
        self.query_one("#contract-explain").border_title = "Rule"
        super().on_mount()

    # ------------------------------------------------------------------ building
    def refresh_step(self) -> None:
        d = self.session.design
        if not d.task:
            self._structure = None
            self.contract = None
            self._set_form(Static(
                "No task yet. Press ctrl+o to open a task file or pick one of the bundled examples.",
                classes="empty"))
            self.query_one("#unknowns", Static).update("")
            self.query_one("#contract-findings", FindingsList).show(())
            self.set_status("open a task file (ctrl+o)", "info")
            return
        if (d.task, d.front_end) != self._loaded_task:
            # The first read imports libcst (about a second), a trace runs the model (seconds to minutes):
            # off the UI thread, so the screen paints at once and says what it is doing.
            self._loaded_task = (d.task, d.front_end)
            self.loading = True
            self._structure = None
            name = Path(d.task).name
            if d.front_end == "traced":
                self._set_form(Static(f"Tracing {name} …", classes="empty", markup=False))
                self.with_consent_to_run(d.task, "Tracing the model", self._start_trace, self._trace_declined)
                return
            self._set_form(Static(f"Reading {name} …", classes="empty", markup=False))
            self.start_work(f"reading {name} (static analysis, nothing is executed)…")
            self._load_contract(self.session.pipeline)
            return
        if self.loading:
            return
        contract, err = attempt(self.session.pipeline.contract)
        self.contract = contract
        if contract is None:
            self._structure = None
            self._set_form(Static(f"✗ {err}", classes="field-error", markup=False))
            self.set_status(err or "", "error")
            return
        stages = self.session.kernels()
        if stages:
            self._show_chain(contract, stages)
            return
        structure = (d.task, tuple((i.name, i.kind) for i in contract.inputs),
                     tuple(dict(contract.init_params)), tuple(sorted(self._extra_keys(contract))),
                     _has_reduction(contract), _has_direction(contract))
        if structure != self._structure:
            self._structure = structure
            self._build_form(contract)
        self._show_values(contract)
        self._show_state(contract)

    def _show_chain(self, contract: Any, stages: tuple[Any, ...]) -> None:
        """A chain of operators: its kernels grouped by submodule, each with its operators (a Tree,
        chain_tree.py), instead of the one-operator form (whose fields a chain does not have)."""
        graph = contract.graph or {}
        d_task = self.session.design.task
        signature = ("chain", d_task, tuple((st.ops, st.submodule) for st in stages))
        if signature != self._structure:
            self._structure = signature
            planned = module_plan_of(self.session.pipeline)
            tree = ChainTree("forward", id="chain-view")
            if planned is not None:
                tree.show(stages, planned[0], planned[1].groups, planned[1].views)
            self._set_form(tree, focus=tree)
        returned = (f"outputs {', '.join(dims_text(s) for s in graph['output_shapes'])}" if graph.get("outputs")
                    else f"output {dims_text(graph.get('output_shape'))}")
        head = Content.assemble((Path(contract.task_path).name if contract.task_path else str(d_task), "bold"), "\n",
                                f"a chain of operators, {returned}\n",
                                (f"{len(stages)} kernels in one module: each gets its own dimensions, tiles and "
                                 "loops (pick the kernel at the top of those steps, or with ctrl+k there; "
                                 "enter on a kernel here picks it)", "$text-success"))
        self.query_one("#unknowns", Static).update(head)
        self.query_one("#contract-findings", FindingsList).show(())
        self.set_status(f"a chain of {len(stages)} kernels: ctrl+n for kernel "
                        f"{min(self.session.design.kernel, len(stages) - 1)}'s dimension plan", "ok")

    @on(Tree.NodeSelected, "#chain-view")
    def _kernel_chosen(self, event: Tree.NodeSelected[int | None]) -> None:
        """Enter (or a click) on a kernel: the Dimensions, Tiles and Loops steps open on it; on a
        submodule or an operator it opens or closes the node (space does that anywhere)."""
        event.stop()
        index = event.node.data
        if index is None:
            event.node.toggle()
            return
        if self.busy:
            return
        self.session.set_kernel(index)
        self.set_status(f"kernel {index} picked: ctrl+n for its dimension plan", "ok")

    def _extra_keys(self, contract: Any) -> set[str]:
        """Unknown fields that have no row of their own get a generic one."""
        keys = set(self._base_specs(contract))
        return {k for k in contract.unknown if not any(_covered(r, k) for r in keys)}

    def _base_specs(self, contract: Any) -> dict[str, FieldSpec]:
        dtypes = tuple(self.session.kb.limits.dtype_bytes)

        def parse_dtype(text: str) -> str:
            t = text.strip()
            if t not in dtypes:
                raise InputError(f"dtype '{t}': use one of {', '.join(dtypes)}")
            return t

        specs: list[FieldSpec] = [
            FieldSpec("family", "family", str, str, "family"),
            FieldSpec("op", "op", parse_text, _show_value, hint="the torch op, e.g. softmax, sum, kl_div"),
        ]
        for inp in contract.inputs:
            if inp.kind == "tensor":
                specs.append(FieldSpec(f"inputs.{inp.name}.shape", f"{inp.name} shape", parse_shape, _show_value,
                                       hint="e.g. 16,256,256"))
                specs.append(FieldSpec(f"inputs.{inp.name}.dtype", f"{inp.name} dtype", parse_dtype, _show_value,
                                       hint="/".join(dtypes)))
            else:
                specs.append(FieldSpec(f"inputs.{inp.name}.value", f"{inp.name} (scalar)", parse_literal,
                                       _show_value))
        for name in dict(contract.init_params):
            specs.append(FieldSpec(f"init_params.{name}", f"init {name}", parse_literal, _show_value))
        for key in window_fields(contract):  # a conv's or pool's parameters, as the contract reads them
            specs.append(FieldSpec(f"op_args.{key}", key, parse_literal, _show_value, hint="an int or one per axis"))
        if window_fields(contract) and isinstance(contract.op_args.get("pointwise"), dict):
            specs.append(FieldSpec("op_args.pointwise", "pointwise stage", parse_literal, _show_value,
                                   hint="the 1x1 conv after it: attr, in_channels, out_channels, bias"))
        if _has_reduction(contract):
            specs += [
                FieldSpec("reduction.op", "reduce op", parse_text, _show_value, hint="sum, mean, max, ..."),
                FieldSpec("reduction.axes", "reduce axes", parse_axes, _show_value, hint="e.g. 1 or 2,3"),
                FieldSpec("reduction.keepdim", "keepdim", bool, str, "keepdim"),
                FieldSpec("reduction.scaling", "scaling", str, str, "scaling"),
            ]
        specs.append(FieldSpec("asymmetric", "asymmetric", parse_bool_word, str, "asym"))
        if _has_direction(contract):
            specs.append(FieldSpec("direction", "direction", parse_text, _show_value, hint="e.g. KL(t || p)"))
        specs += [
            FieldSpec("formula", "formula", parse_text, _show_value),
            FieldSpec("output_shape", "output shape", parse_shape, _show_value),
        ]
        return {s.key: s for s in specs}

    def _build_form(self, contract: Any) -> None:
        specs = self._base_specs(contract)
        for k in sorted(self._extra_keys(contract)):
            specs[k] = FieldSpec(k, k, parse_literal, _show_value)
        self.specs = specs
        self.errors = {}
        rows: list[Widget] = []
        window = [(t, ("op_args.",)) for t in [{"conv": "Convolution", "pool": "Pooling"}.get(contract.family)] if t]
        sections = [("Operator", ("family", "op")), ("Inputs", ("inputs.",)), ("Init parameters", ("init_params.",)),
                    *window,
                    ("Reduction", ("reduction.",)), ("Semantics", ("asymmetric", "direction", "formula",
                                                                  "output_shape")),
                    ("Other unknown fields", tuple(k for k in specs if k not in self._base_specs(contract)))]
        placed: set[str] = set()
        for title, prefixes in sections:
            keys = [k for k in specs if k not in placed and any(k == p or (p.endswith(".") and k.startswith(p))
                                                                  for p in prefixes)]
            if not keys:
                continue
            rows.append(Label(title, classes="section-title"))
            for k in keys:
                placed.add(k)
                rows.append(self._row(specs[k], _get(contract, k)))
        self._set_form(*rows, show=True)

    def _set_form(self, *widgets: Widget, show: bool = False, focus: Widget | None = None) -> None:
        """Replace the form's content. The old rows are removed (awaited) before the new ones are
        mounted: they share ids, and mounting while the removal is pending raised DuplicateIds
        when a second task was opened from this step. Swaps run in order; a newer one wins.
        `focus` takes the focus from the form (a chain's tree) once mounted."""
        self._form_gen += 1
        gen = self._form_gen
        form = self.query_one("#form", VerticalScroll)

        async def swap() -> None:
            # Read before the removal: removing a focused row hands the focus to a neighbour
            # outside the form (the Next button), which is not the user's choice; nor is the Next or
            # Back button Textual focuses while the loading indicator covers the form (a slow load).
            held = self.focused
            in_form = held is None or held is form or form in held.ancestors or held.id in ("next", "back")
            await form.remove_children()
            if gen != self._form_gen:
                return  # a newer form is on its way
            await form.mount(*widgets)
            if focus is not None and (in_form or self.focused in (None, form)):
                focus.focus()
            if show and self.contract is not None:  # the rows exist now: show values and state on them
                self._show_values(self.contract)
                self._show_state(self.contract)
            self._form_shown = gen

        self.call_later(swap)

    @property
    def form_pending(self) -> bool:
        """A form swap is still on its way (its rows mounting, the focus not yet placed): tests and
        scripted drivers wait on this rather than on a count of frames."""
        return self._form_shown != self._form_gen

    def _row(self, spec: FieldSpec, value: Any) -> Widget:
        """One labelled row, created with the contract's value (so mounting it is not an edit)."""
        wid = "f-" + spec.key.replace(".", "--")
        widget: Widget
        if spec.kind == "family":
            widget = Select([(f, f) for f in FAMILIES], allow_blank=False,
                            value=value if value in FAMILIES else "unknown", id=wid, compact=True)
        elif spec.kind == "scaling":
            widget = Select([(s, s) for s in SCALINGS], allow_blank=True, id=wid, compact=True, prompt="unknown",
                            value=value if value in SCALINGS else Select.NULL)
        elif spec.kind in ("keepdim", "asym"):
            widget = Select([("yes", True), ("no", False)], allow_blank=True, id=wid, compact=True,
                            prompt="unknown" if spec.kind == "asym" else "no reduction",
                            value=value if isinstance(value, bool) else Select.NULL)
        else:
            widget = Field(spec.show(value), id=wid, placeholder=spec.hint or "", classes="cfield", compact=True)
        widget.add_class("cwidget")
        row = Horizontal(Label(spec.label, classes="flabel"), widget, classes="frow", id="row-" + wid)
        row.tooltip = spec.key
        return Vertical(row, Static("", classes="ferror", id="err-" + wid), classes="fblock", id="blk-" + wid)

    def _widget_for(self, key: str) -> Widget | None:
        try:
            return self.query_one("#f-" + key.replace(".", "--"))
        except Exception:
            return None

    def _key_of(self, widget: Widget) -> str | None:
        wid = widget.id or ""
        return wid[2:].replace("--", ".") if wid.startswith("f-") else None

    # ------------------------------------------------------------------ showing
    def _show_values(self, contract: Any) -> None:
        focused = self.focused
        for key, spec in self.specs.items():
            w = self._widget_for(key)
            if w is None or w is focused or key in self.errors:
                continue
            value = _get(contract, key)
            if isinstance(w, Select):
                with self.prevent(Select.Changed):
                    if value is None or value == "":
                        if w._allow_blank:
                            w.clear()
                    elif w.value != value:
                        w.value = value
            elif isinstance(w, Input):
                text = spec.show(value)
                if w.value != text:
                    with self.prevent(Input.Changed):
                        w.value = text

    def _show_state(self, contract: Any) -> None:
        unknown = dict(contract.unknown)
        for key in self.specs:
            wid = "f-" + key.replace(".", "--")
            reasons = [r for k, r in unknown.items() if _covered(key, k)]
            try:
                blk = self.query_one("#blk-" + wid)
                err = self.query_one("#err-" + wid, Static)
            except Exception:
                continue
            blk.set_class(bool(reasons), "-unknown")
            blk.set_class(key in self.errors, "-invalid")
            if key in self.errors:
                err.update(Content.styled(f"✗ {self.errors[key]}", "$text-error"))
            elif reasons:
                err.update(Content.styled(f"? unknown: {reasons[0]}", "$text-warning"))
            else:
                err.update("")
            err.display = bool(reasons) or key in self.errors
        box = self.query_one("#unknowns", Static)
        head = Content.assemble((Path(contract.task_path).name if contract.task_path else "", "bold"), "\n",
                                f"family {contract.family}, op {contract.op or '?'}, "
                                f"output {dims_text(contract.output_shape)}\n",
                                ("supported" if contract.supported else f"not supported: {contract.reason}",
                                 "$text-success" if contract.supported else "$text-warning"))
        if unknown:
            lines = [Content.styled(f"\n{len(unknown)} field(s) to fill in before going on:", "$text-warning bold")]
            lines += [Content.assemble("\n• ", (k, "bold"), f": {r}") for k, r in sorted(unknown.items())]
            box.update(Content.assemble(head, *lines))
        else:
            box.update(Content.assemble(head, "\n", ("every field is known", "$text-success")))
        self.query_one("#contract-findings", FindingsList).show(contract.findings)
        stopped = static_stop(self.session.pipeline)
        if self.errors:
            self.set_status(f"{len(self.errors)} field(s) hold a value the contract refused", "error")
        elif stopped:
            self.set_status(f"{stopped}: ctrl+p \"{TRACE_COMMAND}\" reads the model by running it", "warn")
        elif unknown:
            self.set_status(f"fill in {len(unknown)} unknown field(s): {', '.join(sorted(unknown))}", "warn")
        else:
            self.set_status("contract complete: ctrl+n for the dimension plan", "ok")

    # ------------------------------------------------------------------ editing
    def _edit(self, key: str, value: Any) -> None:
        """Apply one edit through the session; undo it if the core refuses it."""
        before = dict(self.session.design.contract_edits)
        if key in before and _norm(before[key]) == _norm(value):
            return
        if key not in before and self.contract is not None and _norm(_get(self.contract, key)) == _norm(value):
            self.errors.pop(key, None)  # typing the extracted value back is not an edit
            self._show_state(self.contract)
            return

        def put(d: Design) -> None:
            d.contract_edits = {**d.contract_edits, key: value}

        self.session.change("contract", put)
        contract, err = attempt(self.session.pipeline.contract)
        if contract is None:
            def undo(d: Design) -> None:
                d.contract_edits = before

            self.session.change("contract", undo)
            self.errors[key] = err or "refused"
            contract = attempt(self.session.pipeline.contract)[0]
        else:
            self.errors.pop(key, None)
        if contract is not None:
            self.contract = contract
            if self._structure is not None and (tuple(sorted(self._extra_keys(contract))) != self._structure[3]
                                                or _has_reduction(contract) != self._structure[4]):
                self.refresh_step()
                return
            self._show_values(contract)
            self._show_state(contract)

    def _parse(self, key: str, text: str) -> tuple[bool, Any]:
        """Check typed text in place (every keystroke); (ok, value)."""
        spec = self.specs.get(key)
        if spec is None:
            return False, None
        try:
            value = spec.parse(text)
        except InputError as exc:
            self.errors[key] = str(exc)
            if self.contract is not None:
                self._show_state(self.contract)
            return False, None
        if self.errors.pop(key, None) is not None and self.contract is not None:
            self._show_state(self.contract)
        return True, value

    def _commit(self, widget: Input) -> None:
        """Apply a field's value as an edit (Enter, leaving the field, or Next)."""
        key = self._key_of(widget)
        if key is None:
            return
        ok, value = self._parse(key, widget.value)
        if ok:
            self._edit(key, value)  # no-op edits are dropped by _edit

    @on(Input.Changed, ".cfield")
    def _input_changed(self, event: Input.Changed) -> None:
        """Live check only: a half-typed shape must not become the contract."""
        event.stop()
        key = self._key_of(event.input)
        if key is not None:
            self._parse(key, event.value)

    @on(Input.Submitted, ".cfield")
    def _input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._commit(event.input)

    @on(Input.Blurred, ".cfield")
    def _input_blurred(self, event: Input.Blurred) -> None:
        self._commit(event.input)

    @on(Select.Changed, ".cwidget")
    def _select_changed(self, event: Select.Changed) -> None:
        event.stop()
        key = self._key_of(event.select)
        if key is None or event.value is Select.NULL:
            return
        self._edit(key, event.value)

    @on(FindingsList.Selected)
    def _finding_selected(self, event: FindingsList.Selected) -> None:
        event.stop()
        self.query_one("#contract-explain", RuleExplanation).explain(self.session.kb, event.finding)

    def next_blocked(self) -> str | None:
        if not self.session.design.task:
            return "open a task file first (ctrl+o)"
        if self.loading:
            return "still reading the task file"
        if isinstance(self.focused, Input) and self.focused.has_class("cfield"):
            self._commit(self.focused)
        if self.contract is None:
            return "the contract could not be read: see the message in the form"
        if not self.contract.supported and self.session.kernels():
            return None  # a chain: its kernels' contracts are complete
        if self.errors:
            return f"fix the refused value(s): {', '.join(sorted(self.errors))}"
        if self.contract.unknown:
            return f"fill in the unknown field(s): {', '.join(sorted(self.contract.unknown))}"
        return None

    def _start_trace(self) -> None:
        self.start_work(f"tracing {Path(self.session.design.task or '').name} with torch.export (its code runs in "
                        "a subprocess of its own)…")
        self._load_contract(self.session.pipeline)

    def _trace_declined(self) -> None:
        """Not traced: the task is read statically again, as it was before the question."""
        self.session.set_front_end("static")
        self.safe_refresh()

    @work(thread=True, exclusive=True, group="contract-load", exit_on_error=False)
    def _load_contract(self, pipeline: Any) -> None:
        _, err = attempt(pipeline.contract)
        if err is None:  # a model's kernels (hundreds for a traced CNN) are planned here, not on the UI thread
            attempt(self.session.kernels)
        self.post_message(WorkFinished("load", None, err))

    # ------------------------------------------------------------------ self-check
    def action_run_check(self) -> None:
        if self.loading:
            self.notify("the task file is still being read: run the self-check once the form is up",
                        severity="information")
            return
        if self.contract is None or not self.session.design.task:
            self.notify("open a task first", severity="warning")
            return
        task = self.session.design.task
        contract = self.contract

        def run() -> None:
            self.start_work("self-check: running the baseline on small asymmetric inputs…")
            self._self_check(contract, task)

        self.with_consent_to_run(task, "The self-check", run)

    @work(thread=True, exclusive=True, group="selfcheck", exit_on_error=False)
    def _self_check(self, contract: Contract, task: str) -> None:
        from pypto_tui.contract.selfcheck import self_check

        self.post_message(WorkProgress("selfcheck", 0, 0, "self-check running in a subprocess…"))
        try:
            result = self_check(contract, task, timeout=SELF_CHECK_TIMEOUT, kb=self.session.kb)
        except Exception as exc:
            self.post_message(WorkFinished("selfcheck", error=describe_error(exc)))
            return
        self.post_message(WorkFinished("selfcheck", result))

    def work_finished(self, job: str, result: Any, error: str | None) -> None:
        if job == "load":
            self.loading = False
            self.safe_refresh()
            self.call_after_refresh(self._focus_if_lost)  # the form exists now (AUTO_FOCUS)
            # The later steps' imports run once the form is up, not while it is being drawn.
            self.set_timer(1.0, self.papp.warm_up)
            return
        if error:
            self.set_status(f"self-check could not run: {error}", "error")
            self.notify(error, title="Self-check", severity="error")
            return
        assert isinstance(result, SelfCheckResult)
        if result.findings and self.contract is not None:
            self.query_one("#contract-findings", FindingsList).show(list(self.contract.findings) + result.findings)
        self.set_status(f"self-check: {result.message}", "ok" if result.ok else "error")
        self.notify(result.message, title="Self-check", severity="information" if result.ok else "warning")
