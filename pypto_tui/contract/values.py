"""Static evaluation of a task file's constants, get_inputs(), get_init_inputs() and __init__.

The task file is untrusted, so nothing is imported or executed: this is a small interpreter
over libcst nodes that knows Python arithmetic on constants, tuples and `*unpacking`, and the
handful of torch calls task files use to build inputs (randn, rand, randint, full, ...) and
modules (nn.GroupNorm, nn.TripletMarginLoss, ...). Anything outside that is an `Unknown` with a
reason: the contract reports it instead of guessing.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, cast

import libcst as cst

from pypto_tui.contract import budget
from pypto_tui.contract.budget import Budget, OutOfBudget
from pypto_tui.contract.signatures import bind, bind_module
from pypto_tui.ops import registry
from pypto_tui.ops.base import OpError, OpKind

TORCH_DTYPES = {
    "float32": "fp32", "float": "fp32", "float16": "fp16", "half": "fp16", "bfloat16": "bf16",
    "float64": "fp64", "double": "fp64", "int32": "int32", "int": "int32", "int64": "int64",
    "long": "int64", "int16": "int16", "short": "int16", "int8": "int8", "uint8": "uint8",
    "bool": "bool",
}
METHOD_DTYPES = {"float": "fp32", "half": "fp16", "bfloat16": "bf16", "double": "fp64", "int": "int32",
                 "long": "int64", "bool": "bool", "short": "int16"}
FLOAT_DTYPES = ("fp32", "fp16", "bf16", "fp64")

RANDOM_REFILLS = {"normal_", "uniform_"}
"""In-place refills of a tensor: its shape and dtype stay, its values cannot be replayed."""
NO_OPS = {"contiguous", "clone", "detach", "cuda", "cpu", "requires_grad_", "to_dense"}


class Unknown:
    """A value the static reader could not determine, with the reason (shown to the user)."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason

    def __repr__(self) -> str:
        return f"Unknown({self.reason!r})"


@dataclass(frozen=True, slots=True)
class Ref:
    """A dotted name reached through an import (`torch`, `torch.nn.functional.kl_div`)."""

    dotted: str


@dataclass(frozen=True, slots=True)
class DType:
    name: str


@dataclass(slots=True)
class TensorSpec:
    shape: tuple[int, ...]
    dtype: str
    recipe: dict[str, Any]


@dataclass(slots=True)
class ModuleSpec:
    type: str
    params: dict[str, Any]
    problems: list[str] = field(default_factory=list)
    attr: str | None = None  # the `self.` attribute that holds it (set when forward calls it)

    def as_attribute(self) -> dict[str, Any]:
        return {"type": self.type, **{k: plain(v) for k, v in self.params.items()}}


@dataclass(slots=True)
class BoundMethod:
    obj: Any
    name: str


@dataclass(slots=True)
class SelfObj:
    attrs: dict[str, Any]


def plain(v: Any) -> Any:
    """A JSON-able rendering of an evaluated value (for attributes and init parameters)."""
    if isinstance(v, TensorSpec):
        return {"type": "tensor", "shape": list(v.shape), "dtype": v.dtype}
    if isinstance(v, ModuleSpec):
        return v.as_attribute()
    if isinstance(v, DType):
        return v.name
    if isinstance(v, Ref):
        return v.dotted
    if isinstance(v, Unknown):
        return None
    if isinstance(v, list | tuple):
        return tuple(plain(x) for x in v)
    if isinstance(v, dict):
        return {k: plain(x) for k, x in v.items()}
    return v


def find_unknown(v: Any) -> Unknown | None:
    if isinstance(v, Unknown):
        return v
    if isinstance(v, list | tuple):
        for x in v:
            u = find_unknown(x)
            if u:
                return u
    if isinstance(v, dict):
        for x in v.values():
            u = find_unknown(x)
            if u:
                return u
    return None


def module_aliases(module: cst.Module) -> dict[str, str]:
    """Import aliases at module level: F -> torch.nn.functional, nn -> torch.nn, ..."""
    out: dict[str, str] = {}

    def dotted(node: cst.BaseExpression) -> str:
        if isinstance(node, cst.Name):
            return node.value
        if isinstance(node, cst.Attribute):
            return f"{dotted(node.value)}.{node.attr.value}"
        return ""

    for stmt in module.body:
        if not isinstance(stmt, cst.SimpleStatementLine):
            continue
        for small in stmt.body:
            if isinstance(small, cst.Import):
                for alias in small.names:
                    full = dotted(alias.name)
                    if alias.asname is not None:
                        out[dotted(alias.asname.name)] = full
                    else:
                        out[full.split(".")[0]] = full.split(".")[0]
            elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
                base = dotted(small.module)
                if isinstance(small.names, cst.ImportStar):
                    continue
                for alias in small.names:
                    name = dotted(alias.name)
                    local = dotted(alias.asname.name) if alias.asname is not None else name
                    out[local] = f"{base}.{name}"
    return out


_BINOPS: dict[type, str] = {
    cst.Add: "add", cst.Subtract: "sub", cst.Multiply: "mul", cst.Divide: "div",
    cst.FloorDivide: "floordiv", cst.Modulo: "mod", cst.Power: "pow", cst.MatrixMultiply: "matmul",
}
_CMPOPS: dict[type, str] = {
    cst.LessThan: "lt", cst.GreaterThan: "gt", cst.LessThanEqual: "le", cst.GreaterThanEqual: "ge",
    cst.Equal: "eq", cst.NotEqual: "ne",
}

# Multiplication and powers are checked before they are computed (budget.py): a file we only read
# must not be able to stall us with `10 ** 10 ** 10` or `pow(10, 10**8)`.
_NUM_OPS: dict[str, Callable[[Any, Any], Any]] = {
    "add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": budget.multiply,
    "div": lambda a, b: a / b, "floordiv": lambda a, b: a // b, "mod": lambda a, b: a % b,
    "pow": budget.power,
    "lt": lambda a, b: a < b, "gt": lambda a, b: a > b, "le": lambda a, b: a <= b,
    "ge": lambda a, b: a >= b, "eq": lambda a, b: a == b, "ne": lambda a, b: a != b,
}

_BUILTINS: dict[str, Callable[..., Any]] = {
    "int": int, "float": float, "bool": bool, "abs": abs, "round": budget.rounded, "len": len,
    "max": max, "min": min, "tuple": budget.sized(tuple, "tuple()"), "list": budget.sized(list, "list()"),
    "range": budget.built_range, "sum": budget.total, "pow": budget.power, "str": str,
}
_MATH = {"sqrt": math.sqrt, "exp": math.exp, "log": math.log, "log2": math.log2, "ceil": math.ceil,
         "floor": math.floor, "prod": budget.product, "pi": math.pi, "e": math.e, "inf": math.inf,
         "isqrt": math.isqrt, "gcd": math.gcd}

MAX_ITEMS = 4096  # a static reader has no business building huge lists


class Evaluator:
    """Evaluates libcst expressions to Python values, TensorSpecs, ModuleSpecs or Unknown.

    Evaluation runs on a budget (budget.py). With `where` (the task reader: the file's name) the
    budget covers the whole file and running out raises OutOfBudget, which the reader reports as
    a refusal (`refusal`); without it (the lint), each outermost `ev` gets a fresh budget and
    running out gives an Unknown."""

    def __init__(self, module: cst.Module, aliases: Mapping[str, str], env: dict[str, Any],
                 where: str | None = None) -> None:
        self.module = module
        self.aliases = aliases
        self.env = env
        self.where = where
        self.budget = Budget()
        self._nesting = 0
        self._last: cst.CSTNode | None = None

    def refusal(self, exc: OutOfBudget) -> str:
        """The one-line refusal of a file whose constants ran out of budget: file, line, why."""
        node = exc.node if isinstance(exc.node, cst.CSTNode) else self._last
        line = _line_of(self.module, node) if node is not None else None
        at = f"{self.where or 'the task file'}" + (f", line {line}" if line else "")
        what = f" '{self.code(node)}'" if node is not None else ""
        return (f"{at}: the static reader stopped evaluating{what}: it needs {exc.reason}, beyond what it "
                "computes for a task file; write the value as a plain number of realistic size")

    def code(self, node: cst.CSTNode) -> str:
        try:
            text = self.module.code_for_node(node).strip()
        except Exception:  # pragma: no cover - libcst refuses odd fragments
            text = type(node).__name__
        return text if len(text) <= 80 else text[:77] + "..."

    # --------------------------------------------------------------------------- expressions
    def ev(self, node: cst.BaseExpression, env: dict[str, Any] | None = None) -> Any:
        env = self.env if env is None else env
        if self._nesting == 0 and self.where is None:
            self.budget.restart()
        self._nesting += 1
        try:
            return self._ev(node, env)
        except OutOfBudget as exc:
            if self.where is not None:
                exc.node = exc.node or node
                raise
            return Unknown(f"'{self.code(node)}' is too big to evaluate statically ({exc.reason})")
        except RecursionError:
            return Unknown(f"'{self.code(node)}' nests too deeply")
        except (ArithmeticError, TypeError, ValueError, IndexError, KeyError, OverflowError) as exc:
            return Unknown(f"'{self.code(node)}' cannot be evaluated statically ({type(exc).__name__})")
        finally:
            self._nesting -= 1

    def _ev(self, node: cst.BaseExpression, env: dict[str, Any]) -> Any:
        self.budget.charge(1, node)
        self._last = node
        if isinstance(node, cst.Integer | cst.Float):
            return budget.fits(node.evaluated_value)
        if isinstance(node, cst.SimpleString | cst.ConcatenatedString):
            v = node.evaluated_value
            return v if isinstance(v, str) else Unknown(f"bytes literal '{self.code(node)}'")
        if isinstance(node, cst.Name):
            return self._name(node.value, env)
        if isinstance(node, cst.Tuple | cst.List):
            items = self._elements(node.elements, env)
            if isinstance(items, Unknown):
                return items
            return tuple(items) if isinstance(node, cst.Tuple) else list(items)
        if isinstance(node, cst.Attribute):
            return self._attr(self._ev(node.value, env), node.attr.value, node)
        if isinstance(node, cst.Call):
            return self._call(node, env)
        if isinstance(node, cst.BinaryOperation):
            op = _BINOPS.get(type(node.operator))
            if op is None:
                return Unknown(f"operator in '{self.code(node)}'")
            return self.binop(op, self._ev(node.left, env), self._ev(node.right, env), node)
        if isinstance(node, cst.UnaryOperation):
            v = self._ev(node.expression, env)
            if isinstance(v, Unknown):
                return v
            if isinstance(node.operator, cst.Minus):
                return self.binop("mul", v, -1, node) if isinstance(v, TensorSpec) else -v
            if isinstance(node.operator, cst.Plus):
                return v
            if isinstance(node.operator, cst.Not) and not isinstance(v, TensorSpec):
                return not v
            return Unknown(f"unary operator in '{self.code(node)}'")
        if isinstance(node, cst.Subscript):
            return self._subscript(node, env)
        if isinstance(node, cst.Comparison) and len(node.comparisons) == 1:
            cmp = node.comparisons[0]
            op = _CMPOPS.get(type(cmp.operator))
            if op is None:
                return Unknown(f"comparison in '{self.code(node)}'")
            return self.binop(op, self._ev(node.left, env), self._ev(cmp.comparator, env), node)
        if isinstance(node, cst.IfExp):
            test = self._ev(node.test, env)
            if isinstance(test, Unknown | TensorSpec):
                return Unknown(f"condition in '{self.code(node)}'")
            return self._ev(node.body if test else node.orelse, env)
        if isinstance(node, cst.BooleanOperation):
            left = self._ev(node.left, env)
            if isinstance(left, Unknown):
                return left
            if isinstance(node.operator, cst.And):
                return self._ev(node.right, env) if left else left
            return left if left else self._ev(node.right, env)
        if isinstance(node, cst.Dict):
            out: dict[Any, Any] = {}
            for el in node.elements:
                if not isinstance(el, cst.DictElement):
                    return Unknown(f"'**' in '{self.code(node)}'")
                key = self._ev(el.key, env)
                if isinstance(key, Unknown):
                    return key
                out[key] = self._ev(el.value, env)
            return out
        if isinstance(node, cst.ListComp | cst.GeneratorExp):
            return self._comprehension(node, env)
        return Unknown(f"'{self.code(node)}' is not a constant expression")

    def _name(self, name: str, env: Mapping[str, Any]) -> Any:
        if name in env:
            return env[name]
        if name in ("True", "False", "None"):
            return {"True": True, "False": False, "None": None}[name]
        if name in self.aliases:
            return Ref(self.aliases[name])
        if name in _BUILTINS:
            return Ref(f"builtins.{name}")
        return Unknown(f"'{name}' is not defined at module level (or not statically known)")

    def _elements(self, elements: Sequence[cst.BaseElement], env: dict[str, Any]) -> list[Any] | Unknown:
        items: list[Any] = []
        for el in elements:
            v = self._ev(el.value, env)
            if isinstance(el, cst.StarredElement):
                if isinstance(v, Unknown):
                    return v
                if not isinstance(v, list | tuple):
                    return Unknown(f"'*{self.code(el.value)}' does not unpack a tuple or list")
                items.extend(v)
            else:
                items.append(v)
        return items

    def _comprehension(self, node: cst.ListComp | cst.GeneratorExp, env: dict[str, Any]) -> Any:
        comp = node.for_in
        if comp.inner_for_in is not None or comp.ifs or not isinstance(comp.target, cst.Name):
            return Unknown(f"comprehension '{self.code(node)}' is too complex to read statically")
        it = self._ev(comp.iter, env)
        if not isinstance(it, list | tuple) or len(it) > MAX_ITEMS:
            return Unknown(f"cannot iterate '{self.code(comp.iter)}' statically")
        out = []
        for item in it:
            self.budget.charge(1, node)
            out.append(self._ev(node.elt, self.child_env(env, {comp.target.value: item})))
        return out

    def child_env(self, env: dict[str, Any], names: dict[str, Any]) -> dict[str, Any]:
        """`env` plus `names` (a comprehension's variable): the lint's evaluator keeps its scope here."""
        return {**env, **names}

    def _subscript(self, node: cst.Subscript, env: dict[str, Any]) -> Any:
        base = self._ev(node.value, env)
        if isinstance(base, Unknown):
            return base
        keys: list[Any] = []
        for el in node.slice:
            s = el.slice
            if isinstance(s, cst.Index):
                keys.append(self._ev(s.value, env))
            elif isinstance(s, cst.Slice):
                parts = [None if p is None else self._ev(p, env) for p in (s.lower, s.upper, s.step)]
                keys.append(slice(*parts))
        if any(isinstance(k, Unknown) for k in keys):
            return next(k for k in keys if isinstance(k, Unknown))
        key: Any = keys[0] if len(keys) == 1 else tuple(keys)
        if isinstance(base, list | tuple | str | dict):
            return base[key]
        if isinstance(base, TensorSpec):
            return Unknown(f"indexing a tensor in '{self.code(node)}'")
        return Unknown(f"cannot index '{self.code(node.value)}' statically")

    def _attr(self, base: Any, attr: str, node: cst.CSTNode) -> Any:
        if isinstance(base, Unknown):
            return base
        if isinstance(base, Ref):
            dotted = f"{base.dotted}.{attr}"
            if base.dotted == "torch" and attr in TORCH_DTYPES:
                return DType(TORCH_DTYPES[attr])
            if base.dotted == "math" and attr in _MATH and not callable(_MATH[attr]):
                return _MATH[attr]
            return Ref(dotted)
        if isinstance(base, SelfObj):
            if attr in base.attrs:
                return base.attrs[attr]
            return Unknown(f"self.{attr} is not set in __init__")
        if isinstance(base, TensorSpec):
            if attr == "shape":
                return tuple(base.shape)
            if attr == "dtype":
                return DType(base.dtype)
            if attr in ("T", "mT"):
                return self.tensor_post(base, "t", ())
            return BoundMethod(base, attr)
        if isinstance(base, list) and attr in ("append", "extend"):
            return BoundMethod(base, attr)
        return Unknown(f"attribute '{attr}' in '{self.code(node)}'")

    def _call(self, node: cst.Call, env: dict[str, Any]) -> Any:
        func = self._ev(node.func, env)
        if isinstance(func, Unknown):
            return func
        args: list[Any] = []
        kwargs: dict[str, Any] = {}
        for a in node.args:
            v = self._ev(a.value, env)
            if a.star == "*":
                if not isinstance(v, list | tuple):
                    return v if isinstance(v, Unknown) else Unknown(f"'*{self.code(a.value)}' is not a tuple")
                args.extend(v)
            elif a.star == "**":
                if not isinstance(v, dict):
                    return v if isinstance(v, Unknown) else Unknown(f"'**{self.code(a.value)}' is not a dict")
                kwargs.update(v)
            elif a.keyword is not None:
                kwargs[a.keyword.value] = v
            else:
                args.append(v)
        return self.call(func, args, kwargs, node)

    # --------------------------------------------------------------------------- operations
    def call(self, func: Any, args: list[Any], kwargs: dict[str, Any], node: cst.CSTNode) -> Any:
        if isinstance(func, BoundMethod):
            if isinstance(func.obj, list):
                if func.name == "append" and len(args) == 1:
                    func.obj.append(args[0])
                elif func.name == "extend" and len(args) == 1 and isinstance(args[0], list | tuple):
                    func.obj.extend(args[0])
                return None
            return self.tensor_post(func.obj, func.name, tuple(args), kwargs)
        if not isinstance(func, Ref):
            return Unknown(f"'{self.code(node)}' calls something that is not statically known")
        dotted = func.dotted
        if dotted.startswith("builtins."):
            bad = find_unknown(args) or find_unknown(kwargs)
            if bad:
                return bad
            return self._counted(_BUILTINS[dotted[9:]], args, kwargs, node)
        if dotted.startswith("math."):
            fn = _MATH.get(dotted[5:])
            bad = find_unknown(args)
            if bad:
                return bad
            return self._counted(fn, args, {}, node) if callable(fn) else Unknown(f"'{dotted}' is not supported")
        if dotted.startswith("torch.nn.") and dotted.rsplit(".", 1)[1][:1].isupper():
            type_name = dotted.rsplit(".", 1)[1]
            if type_name == "Parameter":
                return args[0] if args else kwargs.get("data", Unknown("nn.Parameter() without data"))
            params, problems = bind_module(type_name, args, kwargs)
            return ModuleSpec(type_name, params, problems)
        if dotted.startswith("torch."):
            return self.torch_call(dotted[6:], args, kwargs, node)
        return Unknown(f"'{self.code(node)}' calls '{dotted}', which the static reader does not know")

    def _counted(self, fn: Callable[..., Any], args: list[Any], kwargs: dict[str, Any], node: cst.CSTNode) -> Any:
        """A built-in or math function on the budget: its arguments' items are charged, its result's
        size is checked, and a refusal names the call."""
        try:
            self.budget.charge(sum(len(a) for a in args if isinstance(a, list | tuple)), node)
            return budget.fits(fn(*args, **kwargs))
        except OutOfBudget as exc:
            exc.node = exc.node or node
            raise

    def torch_call(self, name: str, args: list[Any], kwargs: dict[str, Any], node: cst.CSTNode) -> Any:
        """torch.<name>(...) while building inputs: factories, and ops applied to a built tensor."""
        bad = find_unknown(args) or find_unknown(kwargs)
        if bad:
            return bad
        dtype = kwargs.get("dtype")
        dname = dtype.name if isinstance(dtype, DType) else None
        if dtype is not None and dname is None:
            return Unknown(f"dtype in '{self.code(node)}'")
        if name in ("randn", "rand", "ones", "zeros", "empty"):
            shape = _size(args, kwargs)
            if isinstance(shape, Unknown):
                return Unknown(f"size of '{self.code(node)}': {shape.reason}")
            return _spec(shape, dname or "fp32", {"fn": name})
        if name in ("randn_like", "rand_like", "ones_like", "zeros_like", "empty_like", "full_like"):
            if not args or not isinstance(args[0], TensorSpec):
                return Unknown(f"'{self.code(node)}' is not applied to a known tensor")
            src = args[0]
            recipe: dict[str, Any] = {"fn": name[:-5]}
            if name == "full_like":
                recipe["fill"] = args[1] if len(args) > 1 else kwargs.get("fill_value")
            return _spec(src.shape, dname or src.dtype, recipe)
        if name == "randint":
            return self._randint(args, kwargs, dname, node)
        if name == "full":
            size = args[0] if args else kwargs.get("size")
            fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
            shape = _size([size], {})
            if isinstance(shape, Unknown):
                return shape
            if dname is None:
                dname = "bool" if isinstance(fill, bool) else "int64" if isinstance(fill, int) else "fp32"
            return _spec(shape, dname, {"fn": "full", "fill": fill})
        if name == "tensor":
            data = args[0] if args else kwargs.get("data")
            shape = _nested_shape(data)
            if isinstance(shape, Unknown):
                return shape
            if dname is None:
                dname = _literal_dtype(data)
            return _spec(shape, dname, {"fn": "tensor", "data": plain(data)})
        if name == "arange":
            nums = [a for a in args if isinstance(a, int | float)]
            if not nums:
                return Unknown(f"'{self.code(node)}' has no static bounds")
            start: Any
            end: Any
            step: Any
            if len(nums) == 1:
                start, end, step = 0, nums[0], 1
            else:
                start, end, step = nums[0], nums[1], nums[2] if len(nums) > 2 else 1
            count = max(0, math.ceil((end - start) / step))
            all_int = all(isinstance(x, int) for x in nums)
            return _spec((count,), dname or ("int64" if all_int else "fp32"),
                         {"fn": "arange", "start": start, "step": step})
        if name == "eye":
            n = args[0]
            m = args[1] if len(args) > 1 and isinstance(args[1], int) else n
            return _spec((n, m), dname or "fp32", {"fn": "eye"})
        if name == "Size":
            return tuple(args[0]) if args else ()
        if args and isinstance(args[0], TensorSpec):
            return self.tensor_post(args[0], name, tuple(args[1:]), kwargs)
        return Unknown(f"'torch.{name}' is not one of the calls the static reader knows")

    def _randint(self, args: list[Any], kwargs: dict[str, Any], dname: str | None, node: cst.CSTNode) -> Any:
        nums = [a for a in args if isinstance(a, int) and not isinstance(a, bool)]
        sizes = [a for a in args if isinstance(a, list | tuple)]
        size = sizes[0] if sizes else kwargs.get("size")
        low = kwargs.get("low", 0)
        high = kwargs.get("high")
        if len(nums) >= 2:
            low, high = nums[0], nums[1]
        elif len(nums) == 1:
            if high is None:
                high = nums[0]
            else:
                low = nums[0]
        shape = _size([size], {}) if size is not None else Unknown("no size")
        if isinstance(shape, Unknown) or high is None:
            return Unknown(f"'{self.code(node)}': randint needs (low, high, size)")
        return _spec(shape, dname or "int64", {"fn": "randint", "low": low, "high": high})

    def tensor_post(self, spec: Any, name: str, args: tuple[Any, ...], kwargs: Mapping[str, Any] | None = None) -> Any:
        """A call applied to a built tensor (method or torch.<fn>): track shape, dtype, recipe."""
        kwargs = dict(kwargs or {})
        if not isinstance(spec, TensorSpec):
            return Unknown(f"'{name}' applied to something that is not a known tensor")
        bad = find_unknown(args) or find_unknown(kwargs)
        if bad:
            return bad
        post = [*spec.recipe.get("post", ())]
        shape, dtype = spec.shape, spec.dtype
        replayable = spec.recipe.get("replayable", True)
        if name in NO_OPS:
            return spec
        if name in METHOD_DTYPES:
            dtype = METHOD_DTYPES[name]
            post.append(["astype", dtype])
        elif name in ("to", "type"):
            target = kwargs.get("dtype") or next((a for a in args if isinstance(a, DType)), None)
            if isinstance(target, DType):
                dtype = target.name
                post.append(["astype", dtype])
        elif name in RANDOM_REFILLS:
            post.append([name, None])
            replayable = False
        elif (kept := shape_keeping_call(name, shape, args, kwargs)) is not None:
            kind, params = kept
            if kind.role == "softmax" and params.get("dim") is None:
                replayable = False  # torch's implicit dim is deprecated: no axis to replay
            values = [plain(params.get(p)) for p in kind.params]
            while values and values[-1] is None:
                values.pop()
            post.append([kind.name, *values])
            if dtype in ("int32", "int64", "bool") and _floating_result(kind, params, len(shape)):
                dtype = "fp32"
        elif name in ("t", "transpose", "permute", "unsqueeze", "squeeze"):
            new = _reshape_op(shape, name, args, kwargs)
            if isinstance(new, Unknown):
                return new
            shape = new
            post.append([name, *[plain(a) for a in args]])
        elif name in ("view", "reshape", "flatten", "expand", "repeat"):
            new = _reshape_op(shape, name, args, kwargs)
            if isinstance(new, Unknown):
                return new
            shape, replayable = new, False
            post.append([name, *[plain(a) for a in args]])
        elif name in ("mul", "add", "sub", "div", "pow"):
            if not args:
                return Unknown(f"'{name}()' without an argument")
            return self.binop(name, spec, args[0], None)
        else:
            return Unknown(f"'.{name}(...)' on an input tensor is not something the static reader knows")
        recipe = {**spec.recipe, "post": post, "replayable": replayable}
        return TensorSpec(tuple(shape), dtype, recipe)

    def binop(self, op: str, a: Any, b: Any, node: cst.CSTNode | None) -> Any:
        for v in (a, b):
            if isinstance(v, Unknown):
                return v
        ta, tb = isinstance(a, TensorSpec), isinstance(b, TensorSpec)
        if not ta and not tb:
            if op == "add" and isinstance(a, list | tuple) and isinstance(b, list | tuple):
                budget.check_length(len(a) + len(b), "a concatenation")
                self.budget.charge(len(a) + len(b), node)
                return type(a)(list(a) + list(b))
            if op == "mul" and isinstance(a, list | tuple) and isinstance(b, int):
                if len(a) * b > MAX_ITEMS:
                    return Unknown(f"'{self.code(node) if node is not None else op}' builds too long a sequence")
                self.budget.charge(max(len(a) * b, 0), node)
                return type(a)(list(a) * b)
            if op in _NUM_OPS and isinstance(a, int | float) and isinstance(b, int | float):
                try:
                    return budget.fits(_NUM_OPS[op](a, b))
                except OutOfBudget as exc:
                    exc.node = exc.node or node
                    raise
            return Unknown(f"'{self.code(node) if node is not None else op}' mixes values the reader cannot combine")
        if ta and tb:
            both = broadcast(a.shape, b.shape)
            if both is None:
                return Unknown(f"shapes {a.shape} and {b.shape} do not broadcast")
            shape = cast(tuple[int, ...], both)  # known sizes in, known sizes out
            dtype = _promote(a.dtype, b.dtype, op)
            recipe = {"fn": "combine", "op": op, "a": a.recipe, "b": b.recipe, "a_shape": list(a.shape),
                      "b_shape": list(b.shape), "replayable": False, "post": []}
            return TensorSpec(shape, dtype, recipe)
        spec, scalar = (a, b) if ta else (b, a)
        if not isinstance(scalar, int | float | bool):
            return Unknown(f"'{op}' between a tensor and a non-number")
        side = "r" if ta else "l"  # where the scalar sits
        dtype = spec.dtype
        if op in ("lt", "gt", "le", "ge", "eq", "ne"):
            dtype = "bool"
        elif dtype not in FLOAT_DTYPES and (isinstance(scalar, float) or op == "div"):
            dtype = "fp32"
        post = [*spec.recipe.get("post", ()), [op if side == "r" else f"r{op}", scalar]]
        return TensorSpec(spec.shape, dtype, {**spec.recipe, "post": post})


def shape_keeping_call(name: str, shape: Sequence[int], args: Sequence[Any],
                       kwargs: Mapping[str, Any]) -> tuple[OpKind, dict[str, Any]] | None:
    """The registry's one-tensor kind a call on a built input spells, with its bound parameters, when
    its result keeps the input's shape and numpy can replay it (the kind's reference): the self-check
    rebuilds such an input at a scaled size from the same steps (get_inputs' `randn(...).abs()`)."""
    kind = registry.by_spelling(name, "method")
    if kind is None or kind.arity != 1 or kind.reference is None or kind.identity or kind.role == "view":
        return None
    params, problems = bind(kind.params, args, kwargs)  # torch's defaults are the reference's own
    if problems:
        return None
    try:
        out = kind.shape((tuple(shape),), params)
    except (TypeError, ValueError, IndexError, KeyError):
        return None
    return (kind, params) if tuple(out) == tuple(shape) else None


def _floating_result(kind: OpKind, params: Mapping[str, Any], rank: int) -> bool:
    """Whether torch gives a float tensor for an integer input: numpy's reference promotes as torch
    does for the one-tensor kinds (exp, sqrt, sigmoid, softmax, reciprocal do; abs, relu, sign do not)."""
    import numpy as np

    assert kind.reference is not None
    try:
        given = {k: v for k, v in params.items() if v is not None}
        out = kind.reference(np.full((2,) * max(rank, 1), 2, dtype=np.int64), **given)
    except (TypeError, ValueError, IndexError):  # numpy's AxisError is both of the last two
        return False
    return bool(np.asarray(out).dtype.kind in "fc")


def _spec(shape: tuple[int, ...], dtype: str, recipe: dict[str, Any]) -> TensorSpec:
    recipe = {**recipe, "shape": list(shape), "dtype": dtype, "post": [], "replayable": True}
    return TensorSpec(tuple(shape), dtype, recipe)


def _size(args: Sequence[Any], kwargs: Mapping[str, Any]) -> tuple[int, ...] | Unknown:
    """torch.randn(2, 3), torch.randn((2, 3)), torch.randn(size=(2, 3)), torch.randn([])."""
    vals: Any = list(args)
    if "size" in kwargs:
        vals = [kwargs["size"]]
    if len(vals) == 1 and isinstance(vals[0], list | tuple):
        vals = list(vals[0])
    out = []
    for v in vals:
        if isinstance(v, Unknown):
            return v
        if isinstance(v, bool) or not isinstance(v, int):
            return Unknown(f"size entry {v!r} is not an integer")
        if v < 0:
            return Unknown(f"negative size {v}")
        out.append(v)
    return tuple(out)


def _nested_shape(data: Any) -> tuple[int, ...] | Unknown:
    if isinstance(data, int | float | bool):
        return ()
    if isinstance(data, list | tuple):
        if not data:
            return (0,)
        inner = _nested_shape(data[0])
        if isinstance(inner, Unknown):
            return inner
        return (len(data), *inner)
    return Unknown("torch.tensor() of something that is not a literal")


def _literal_dtype(data: Any) -> str:
    flat: list[Any] = []

    def walk(x: Any) -> None:
        if isinstance(x, list | tuple):
            for y in x:
                walk(y)
        else:
            flat.append(x)

    walk(data)
    if flat and all(isinstance(x, bool) for x in flat):
        return "bool"
    if flat and all(isinstance(x, int) and not isinstance(x, bool) for x in flat):
        return "int64"
    return "fp32"


Dims = tuple[int | None, ...]


def broadcast(*shapes: Dims) -> Dims | None:
    """numpy's broadcast of `shapes`, None when two known sizes clash. A None size is one the reader
    does not know: it stays None unless another shape has a size > 1 there. The contract (task
    shapes) and the lint (kernel shapes, some dynamic) both broadcast with this."""
    rank = max((len(s) for s in shapes), default=0)
    out: list[int | None] = []
    for i in range(rank):
        dims = [s[i - rank + len(s)] for s in shapes if i - rank + len(s) >= 0]
        big = {d for d in dims if d is not None and d != 1}
        if len(big) > 1:
            return None
        if big:
            out.append(big.pop())
        elif any(d is None for d in dims):
            out.append(None)
        else:
            out.append(1)
    return tuple(out)


def _promote(a: str, b: str, op: str) -> str:
    if op in ("lt", "gt", "le", "ge", "eq", "ne"):
        return "bool"
    order = ["bool", "uint8", "int8", "int16", "int32", "int64", "bf16", "fp16", "fp32", "fp64"]
    fa, fb = a in FLOAT_DTYPES, b in FLOAT_DTYPES
    if fa and not fb:
        return a
    if fb and not fa:
        return b
    if {a, b} == {"fp16", "bf16"}:
        return "fp32"
    res = max(a, b, key=lambda d: order.index(d) if d in order else 0)
    if op == "div" and res not in FLOAT_DTYPES:
        return "fp32"
    return res


def _reshape_op(shape: tuple[int, ...], name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> Any:
    """The shape after a view or an axis move on a built input: the registry's view steps (ops/views.py) or
    its layout kind's shape function (a transpose, a permute); `repeat`, which no kind computes, here."""
    from pypto_tui.ops.views import VIEW_NAMES, out_shape, read_view

    try:
        if name in VIEW_NAMES:
            cur = tuple(shape)
            for step in read_view(name, cur, args, kwargs):
                cur = out_shape(step, cur)
            return cur
        if name == "repeat":
            dims = list(args[0]) if len(args) == 1 and isinstance(args[0], list | tuple) else list(args)
            return tuple(a * b for a, b in zip(dims, (1,) * (len(dims) - len(shape)) + shape, strict=True))
        kind = registry.by_spelling(name, "method")
        if kind is not None and kind.role == "layout" and kind.arity == 1:
            many = len(kind.params) == 1 and len(args) > 1  # x.permute(0, 2, 1): the one parameter, spread
            attrs = {kind.params[0]: tuple(args)} if many else dict(zip(kind.params, args, strict=False))
            return tuple(kind.shape([shape], {**attrs, **kwargs}))
    except OpError as exc:  # the registry's words: a reshape that does not fit, an axis out of range
        return Unknown(f"cannot follow '.{name}(...)' statically: {exc}")
    except (KeyError, IndexError, TypeError, ValueError):
        pass
    return Unknown(f"cannot follow '.{name}(...)' statically")


def _line_of(module: cst.Module, node: cst.CSTNode) -> int | None:
    """The line `node` starts on (computed only for an error message: positions cost a pass)."""
    from libcst.metadata import MetadataWrapper, PositionProvider

    try:
        positions = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    except Exception:  # pragma: no cover - a tree libcst cannot lay out
        return None
    pos = positions.get(node)
    return pos.start.line if pos is not None else None
