"""get_inputs' tensors built through views and axis moves (`randn(8, 6).t()`, `.permute(2, 0, 1)`,
`.view(-1, 3)`): the static reader follows their shapes with the registry's view steps and layout
shapes, the ones the graph uses, and says why when it cannot."""

from __future__ import annotations

import pytest
from support import ONE_LINE_TASK

from pypto_tui.contract.extract import extract_contract


def _input_shape(built: str) -> tuple[int, ...] | None:
    c = extract_contract(ONE_LINE_TASK.format(body="", args="x", expr="torch.relu(x)", inputs=built))
    (x,) = c.tensor_inputs
    return x.shape


@pytest.mark.parametrize(("built", "shape"), [
    ("torch.randn(8, 6).t()", (6, 8)),
    ("torch.randn(2, 3, 4).transpose(0, 2)", (4, 3, 2)),
    ("torch.randn(2, 3, 4).permute(2, 0, 1)", (4, 2, 3)),
    ("torch.randn(2, 3, 4).permute((1, 2, 0))", (3, 4, 2)),
    ("torch.randn(2, 3, 4).view(-1, 4)", (6, 4)),
    ("torch.randn(2, 3, 4).flatten(1)", (2, 12)),
    ("torch.randn(2, 1, 4).squeeze(1)", (2, 4)),
    ("torch.randn(2, 4).unsqueeze(-1)", (2, 4, 1)),
    ("torch.randn(1, 4).expand(3, -1)", (3, 4)),
    ("torch.randn(2, 4).repeat(2, 3)", (4, 12)),
])
def test_an_input_built_through_views_has_its_shape(built: str, shape: tuple[int, ...]) -> None:
    assert _input_shape(built) == shape


def test_a_reshape_that_does_not_fit_says_so() -> None:
    from pypto_tui.errors import TaskFileError

    with pytest.raises(TaskFileError, match=r"cannot follow '\.view\(\.\.\.\)' statically: cannot view \(2, 3, 4\) "
                                            r"as \(5, 5\)"):
        extract_contract(ONE_LINE_TASK.format(body="", args="x", expr="torch.relu(x)",
                                              inputs="torch.randn(2, 3, 4).view(5, 5)"))
