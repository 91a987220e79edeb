"""What each kernel role (a contract's family) means to the steps that plan it, as data.

The dimension step, the contract checks, verification and the roofline ask these questions of a
family instead of naming families in branches, so a new role is one row here (plus its pattern and
pack data), not an edit in every step that plans a kernel.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class RoleTraits:
    """- `output_in_kernel_layout`: an output with the input's element count is written in the
      kernel's own layout (forward reshapes it back), not re-laid out by the plan.
    - `output_keeps_rank`: the output keeps the input's rank and shape as given (a scan; an exclusive
      scan's axis grows by its zero slice).
    - `broadcasts`: operands of different shapes broadcast against each other (groups of axes), and
      flattening to 1-D is the documents' layout for it (P3.flatten-elementwise).
    - `operand_layout`: the kernel's layout comes from its operands' roles (M, K, N), not from a
      reshape strategy; the vec tile's rank limit does not bind it.
    - `cube`: the kernel runs on the cube unit (verification keeps the cube tiles).
    - `merges_reduce_axes`: several reduce axes may merge into one (O3), the partial results feeding
      nothing else.
    - `window`: a sliding window (kernel size, stride, padding, dilation) is part of the contract.
    - `channels_fixed`: the module is built for its input channels: smaller test shapes keep them.
    - `sizes_in_init`: sizes passed to `__init__` may be baked into the module (normalized shapes,
      features): smaller test shapes keep them.
    - `whole_axis_loop`: on a rank-1 kernel the loop runs over the reduced axis itself.
    - `strided_cost`: the roofline counts the window's strided reads.
    - `tile_on_output`: the tile and the loop are planned on the output's kernel shape, which every
      input's part is a slice of (a concatenation: the parts differ in width, the output holds them all).
    """

    output_in_kernel_layout: bool = False
    output_keeps_rank: bool = False
    broadcasts: bool = False
    operand_layout: bool = False
    cube: bool = False
    merges_reduce_axes: bool = False
    window: bool = False
    channels_fixed: bool = False
    sizes_in_init: bool = False
    whole_axis_loop: bool = False
    strided_cost: bool = False
    tile_on_output: bool = False


ROLE_TRAITS: dict[str, RoleTraits] = {
    "elementwise": RoleTraits(output_in_kernel_layout=True, broadcasts=True),
    "softmax": RoleTraits(output_in_kernel_layout=True),
    "scan": RoleTraits(output_in_kernel_layout=True, output_keeps_rank=True),
    "norm": RoleTraits(output_in_kernel_layout=True, sizes_in_init=True, whole_axis_loop=True),
    "reduction": RoleTraits(merges_reduce_axes=True),
    "loss": RoleTraits(whole_axis_loop=True),
    "matmul": RoleTraits(operand_layout=True, cube=True),
    "attention": RoleTraits(cube=True),
    "recurrent": RoleTraits(cube=True, sizes_in_init=True),
    "conv": RoleTraits(window=True, channels_fixed=True),
    "pool": RoleTraits(window=True, strided_cost=True),
    "layout": RoleTraits(tile_on_output=True),
}

NO_TRAITS = RoleTraits()


def traits(family: str | None) -> RoleTraits:
    """The traits of a family (none for 'unknown' or a family this table does not know)."""
    return ROLE_TRAITS.get(family or "", NO_TRAITS)
