"""An MoE explorer: memory, expert time, AllToAll time and drops of an expert-parallel layer.

A reader sets the experts ``E``, top-``k``, ``D``, the expert width ``F_e``, the MoE layers,
the capacity factor, the chip, the expert-parallel degree and the tokens per chip. They see
step time against tokens per chip for the MoE experts (with and without their AllToAlls) and a
dense MLP of equal active width, the critical batch per chip, and the step split into expert
time and AllToAll; the summary gives memory per chip, the expected dropped share and the
critical batch.

The front end here is the controls; the state, chart and summary are
:mod:`scalebook.live.moe`'s, drawn by :class:`~scalebook.widgets.explorer.Explorer`.
"""

from __future__ import annotations

import ipywidgets as widgets

from ..live.moe import DEFAULTS, MOE_CHIPS, moe_state
from .explorer import Explorer

__all__ = ["moe_explorer"]


def moe_explorer(chip: str = DEFAULTS["chip"], *, n_experts: int = DEFAULTS["n_experts"],
                 top_k: int = DEFAULTS["top_k"], d_model: int = DEFAULTS["d_model"],
                 d_expert: int = DEFAULTS["d_expert"], n_layers: int = DEFAULTS["n_layers"],
                 capacity_factor: float = DEFAULTS["capacity_factor"], ep: int = DEFAULTS["ep"],
                 tokens_per_chip: float = DEFAULTS["tokens_per_chip"],
                 dpi: float = 100) -> Explorer:
    """The MoE explorer (default: DeepSeek-V3's MoE layers on 64 H100s, 4,096 tokens each).

    ``w.controls`` holds the controls by the names of :func:`scalebook.live.moe.moe_state`'s
    arguments; ``w.state`` is a :class:`~scalebook.live.moe.MoEState`. Raises ``ValueError``
    for bad initial inputs.
    """
    moe_state(chip, n_experts, top_k, d_model, d_expert, n_layers, capacity_factor, ep,
              tokens_per_chip)   # refuse bad initial inputs with the state's own message
    powers = [2 ** i for i in range(0, 10)]
    style = {"description_width": "initial"}
    controls = {
        "chip": widgets.Dropdown(options=MOE_CHIPS, value=chip, description="chip"),
        "n_experts": widgets.SelectionSlider(options=powers[1:], value=n_experts,
                                             description="experts E"),
        "top_k": widgets.SelectionSlider(options=powers[:6], value=top_k, description="top-k"),
        "d_model": widgets.IntText(value=d_model, description="D", style=style,
                                   layout=widgets.Layout(width="18%")),
        "d_expert": widgets.IntText(value=d_expert, description="expert width F_e",
                                    style=style, layout=widgets.Layout(width="26%")),
        "n_layers": widgets.IntText(value=n_layers, description="MoE layers", style=style,
                                    layout=widgets.Layout(width="22%")),
        "capacity_factor": widgets.FloatSlider(value=capacity_factor, min=1.0, max=2.0,
                                               step=0.05, description="capacity c",
                                               style=style),
        "ep": widgets.SelectionSlider(options=powers, value=ep, description="EP degree",
                                      style=style),
        "tokens_per_chip": widgets.FloatLogSlider(value=tokens_per_chip, base=2, min=4, max=18,
                                                  step=0.5, description="tokens per chip",
                                                  style=style),
    }
    rows = [("chip", "n_experts", "top_k"), ("d_model", "d_expert", "n_layers"),
            ("capacity_factor", "ep", "tokens_per_chip")]
    return Explorer("scalebook.live.moe", controls, layout_rows=rows, state=moe_state, dpi=dpi)
