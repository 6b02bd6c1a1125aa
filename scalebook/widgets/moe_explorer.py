"""An MoE explorer: memory, expert time, AllToAll time and drops of an expert-parallel layer.

A reader sets the experts ``E``, top-``k``, ``D``, the expert width ``F_e``, the MoE layers,
the capacity factor, the chip, the expert-parallel degree and the tokens per chip. They see
step time against tokens per chip for the MoE experts (with and without their AllToAlls) and a
dense MLP of equal active width, the critical batch per chip, and the step split into expert
time and AllToAll; the summary gives memory per chip, the expected dropped share and the
critical batch.

Two layers, as for the other widgets: the state, chart and summary live in
:mod:`scalebook.live.moe` (plain Python, also run in the reader's browser on the book's site);
here :func:`draw_chart` draws that same chart description with matplotlib, so the Jupyter and
browser pictures are drawn from one set of numbers, and :func:`moe_explorer` makes the widget.
"""

from __future__ import annotations

import ipywidgets as widgets
from matplotlib.figure import Figure

from ..live.moe import (DEFAULTS, MOE_CHIPS, FIGURE_PX, MoEState, moe_chart, moe_state,
                        moe_summary)
from . import Explorer, _figure

__all__ = ["moe_explorer", "draw_chart", "MoEState", "moe_state", "moe_summary"]


def _dash(dash):
    return (0, tuple(d / 1.5 for d in dash)) if dash else "solid"


def draw_chart(figure: Figure, description: dict) -> dict[str, object]:
    """Draw a :mod:`scalebook.live.chart` description on ``figure``'s axes, one per panel
    (lines, points, bars and annotations: what the MoE chart uses). Returns ``{}``."""
    for text in list(figure.texts):
        text.remove()
    for ax, panel in zip(figure.axes, description["panels"]):
        ax.clear()
        x, y = panel["x"], panel["y"]
        if x["scale"] == "category":
            ax.set_xticks(range(len(x["categories"])), x["categories"])
            ax.set_xlim(-0.5, len(x["categories"]) - 0.5)
        else:
            ax.set_xscale(x["scale"])
            ax.set_xlim(x["min"], x["max"])
        ax.set_yscale(y["scale"])
        ax.set_ylim(y["min"], y["max"])
        for axis, spec in ((ax.xaxis, x), (ax.yaxis, y)):
            if spec.get("ticks"):
                values, labels = zip(*spec["ticks"])
                axis.set_ticks(values, labels)
                axis.set_minor_locator(__import__("matplotlib").ticker.NullLocator())
        ax.set_xlabel(x["label"])
        ax.set_ylabel(y["label"])
        ax.set_title(panel["title"], fontsize=9, loc="left")
        for s in panel["series"]:
            if s["kind"] == "line":
                xs, ys = zip(*s["points"])
                ax.plot(xs, ys, color=s["colour"], lw=s["width"], ls=_dash(s["dash"]),
                        label=s["label"])
            elif s["kind"] == "points":
                xs, ys = zip(*s["points"])
                ax.scatter(xs, ys, s=s["size"] ** 2, color=s["colour"], edgecolors="black",
                           zorder=3)
            elif s["kind"] == "bars":
                ax.bar(range(len(s["values"])), s["values"], color=s["colours"], width=0.6)
                for i, (v, t) in enumerate(zip(s["values"], s["texts"])):
                    ax.text(i, v, t, ha="center", va="bottom", fontsize=8)
            elif s["kind"] == "annotations":
                for (px, py), t in zip(s["points"], s["texts"]):
                    ax.text(px, py, t, ha=s["align"], va="bottom", color=s["colour"],
                            fontsize=s["size"] * 0.75)
        if panel["legend"]:
            ax.legend(loc=panel["legend"], fontsize=7, frameon=False)
        ax.grid(True, alpha=0.3)
    for i, t in enumerate(description["texts"]):
        figure.text(0.01, 0.985 - 0.05 * i, t["text"], fontsize=9, va="top", color=t["colour"],
                    weight="bold" if t["bold"] else "normal")
    return {}


def moe_explorer(chip: str = DEFAULTS["chip"], *, n_experts: int = DEFAULTS["n_experts"],
                 top_k: int = DEFAULTS["top_k"], d_model: int = DEFAULTS["d_model"],
                 d_expert: int = DEFAULTS["d_expert"], n_layers: int = DEFAULTS["n_layers"],
                 capacity_factor: float = DEFAULTS["capacity_factor"], ep: int = DEFAULTS["ep"],
                 tokens_per_chip: float = DEFAULTS["tokens_per_chip"],
                 dpi: float = 100) -> Explorer:
    """The MoE explorer (default: DeepSeek-V3's MoE layers on 64 H100s, 4,096 tokens each).

    ``w.controls`` holds the controls by the names of :func:`scalebook.live.moe.moe_state`'s
    arguments; ``w.state`` is a :class:`MoEState`. Raises ``ValueError`` for bad initial inputs.
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
    figure = _figure((FIGURE_PX[0] / 100, FIGURE_PX[1] / 100), dpi, ncols=2, left=0.07,
                     right=0.98, bottom=0.14, top=0.82, wspace=0.3)
    rows = [("chip", "n_experts", "top_k"), ("d_model", "d_expert", "n_layers"),
            ("capacity_factor", "ep", "tokens_per_chip")]
    return Explorer(controls, figure, moe_state, lambda fig, st: draw_chart(fig, moe_chart(st)),
                    moe_summary, layout_rows=rows, live="scalebook.live.moe")
