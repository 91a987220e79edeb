"""The budget of static evaluation: a task file's constants may not cost more than a small task's.

The static reader computes a task file's constants (`N = 2 ** 14`, `SHAPE = (N, 4 * N)`). The
file is untrusted, and a few short lines can stall or exhaust any evaluator that simply calls
Python: `pow(10, 10**8)` runs for minutes, forty lines of `N *= N` need gigabytes,
`len(range(10**8))` builds a hundred million items, `math.prod(range(1, 4000))` makes a number
whose decimal text Python refuses to print. So every evaluation runs on a budget:

- steps: each expression evaluated, loop iteration and built item costs one (a nested
  comprehension or loop cannot multiply its way to millions); `MAX_STEPS` in all;
- time: `MAX_SECONDS` of wall time, a backstop checked every few hundred steps;
- integer size: no integer beyond `MAX_INT_BITS` bits, checked *before* a multiplication or a
  power is computed (a shape is a few dozen bits; floats' largest integer is 1024 bits);
- sequence length: no built sequence (a range, a concatenation, `list(...)`) beyond `MAX_BUILT`
  items, checked before it is built.

A real KernelBench task uses at most about 50 steps (103 tasks measured). Running out raises
`OutOfBudget`; the task reader turns it into a one-line refusal naming the file and line, the lint
into an unknown value.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from typing import Any

MAX_STEPS = 50_000
MAX_SECONDS = 2.0
MAX_INT_BITS = 2048
MAX_BUILT = 65_536
_CLOCK_EVERY = 512  # steps between two looks at the clock


class OutOfBudget(Exception):
    """Static evaluation went beyond its budget. Not a ValueError on purpose: the evaluator turns
    arithmetic errors into unknown values, and this one must reach the reader as a refusal."""

    def __init__(self, reason: str, node: object | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.node = node


class Budget:
    """Steps and wall time left for one evaluation (one task file, or one lint expression)."""

    def __init__(self, max_steps: int = MAX_STEPS, max_seconds: float = MAX_SECONDS) -> None:
        self.max_steps = max_steps
        self.max_seconds = max_seconds
        self.restart()

    def restart(self) -> None:
        self.steps = 0
        self._next_clock = _CLOCK_EVERY
        self._deadline = time.monotonic() + self.max_seconds

    def charge(self, steps: int = 1, node: object | None = None) -> None:
        self.steps += steps
        if self.steps > self.max_steps:
            raise OutOfBudget(f"more than {self.max_steps} evaluation steps", node)
        if self.steps >= self._next_clock:
            self._next_clock = self.steps + _CLOCK_EVERY
            if time.monotonic() > self._deadline:
                raise OutOfBudget(f"more than {self.max_seconds:g} s of evaluation", node)


def check_int(value: Any) -> None:
    """Refuse an integer (bools pass) beyond MAX_INT_BITS."""
    if isinstance(value, int) and value.bit_length() > MAX_INT_BITS:
        raise OutOfBudget(f"an integer of {value.bit_length()} bits (at most {MAX_INT_BITS})")


def check_length(n: int, what: str = "a sequence") -> None:
    if n > MAX_BUILT:
        raise OutOfBudget(f"{what} of {n} items (at most {MAX_BUILT})")


def _bits(x: int) -> int:
    return max(abs(x).bit_length(), 1)


def multiply(a: Any, b: Any) -> Any:
    """`a * b` on numbers, refused before it is computed when the product's size is too big."""
    if isinstance(a, int) and isinstance(b, int) and _bits(a) + _bits(b) > MAX_INT_BITS + 1:
        raise OutOfBudget(f"a product of {_bits(a) + _bits(b)} bits (at most {MAX_INT_BITS})")
    return a * b


def power(a: Any, b: Any, mod: Any = None) -> Any:
    """`a ** b` (and the built-in `pow`), refused before it is computed when the result is too big."""
    if mod is not None:  # modular power: the result is smaller than mod; the work grows with b's bits only
        for v in (a, b, mod):
            check_int(v)
        return pow(a, b, mod)
    big = isinstance(a, int) and isinstance(b, int) and abs(a) > 1
    if big and b > 0 and (b > MAX_INT_BITS or (_bits(a) - 1) * b > MAX_INT_BITS):
        raise OutOfBudget(f"a power of about {(_bits(a) - 1) * b} bits (at most {MAX_INT_BITS})")
    if big and b < -MAX_INT_BITS:
        raise OutOfBudget("a power with an exponent this large")
    return a**b


def product(items: Iterable[Any], start: Any = 1) -> Any:
    """`math.prod`, one factor at a time under the integer bound."""
    out = start
    for x in items:
        out = multiply(out, x)
    return out


def built_range(*args: Any) -> tuple[int, ...]:
    """`range(...)` as a tuple, refused before it is built when it is too long."""
    r = range(*args)
    check_length(len(r), "a range")
    return tuple(r)


def rounded(x: Any, ndigits: Any = None) -> Any:
    """`round`: an integer rounded to -n digits computes 10 ** n first."""
    if isinstance(ndigits, int) and abs(ndigits) > MAX_INT_BITS:
        raise OutOfBudget(f"round() to {ndigits} digits")
    return round(x) if ndigits is None else round(x, ndigits)


def total(items: Iterable[Any], start: Any = 0) -> Any:
    """`sum` of numbers only (`sum(lists, [])` is quadratic)."""
    out = start
    for x in items:
        if not isinstance(x, int | float) or not isinstance(out, int | float):
            raise TypeError("sum of something that is not a number")
        out = out + x
    return out


def sized(fn: Callable[..., Any], what: str) -> Callable[..., Any]:
    """`fn` (tuple, list), refusing a result longer than MAX_BUILT before it is built when the
    argument tells its length."""

    def call(*args: Any) -> Any:
        if args and hasattr(args[0], "__len__"):
            check_length(len(args[0]), what)
        return fn(*args)

    call.__name__ = getattr(fn, "__name__", what)
    return call


def fits(value: Any) -> Any:
    """`value`, after checking a number's size and a sequence's length."""
    if isinstance(value, int):
        check_int(value)
    elif isinstance(value, list | tuple | str):
        check_length(len(value), "a value")
    return value
