"""The transformer calculator's numbers: state, plot series, summary, and the live view.

Plain Python on :mod:`scalebook.transformer` and :mod:`scalebook.training` (no ipywidgets,
no matplotlib, no NumPy arrays), shared by the Jupyter widget
(:func:`scalebook.widgets.calculator.transformer_calculator`, drawn with
matplotlib) and the book's static site (:func:`view`, drawn in the reader's browser).

What it shows for a model, a context length T, a token budget, a cluster and an MFU:

- the parameters by block (embedding, attention with grouped-query K/V, MLP, unembedding);
- training FLOPs per token against T in units of ``6·P_matmul``: the weight matmuls at 1, the
  attention core ``12·L·T·H·d_h / 6·P_matmul`` rising through it, the crossover marked;
- the training memory per chip by kind (perfect sharding over the cluster) in units of HBM;
- the days to train at the MFU, and at 100% (peak).
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

from ..hardware import chip_names, get_chip
from ..training import (
    MIXED_PRECISION_ADAM,
    PRESETS,
    REMAT_MODES,
    TrainingFootprint,
    fewest_chips,
    run_time,
    training_memory,
)
from ..transformer import (
    FlopsPerToken,
    ParamCount,
    TransformerConfig,
    attention_crossover_context,
    flops_per_token,
    param_count,
)
from ..units import format_bytes, format_count, format_integer, format_seconds
from . import chart, summary
from .options import refused_options
from .comparison import _power_of_ten

__all__ = [
    "CalculatorState", "calculator_state", "param_fractions", "flops_curves",
    "calculator_series", "calculator_summary", "calculator_chart", "linked_controls", "view",
    "MODEL_FIELDS", "CUSTOM", "DEFAULT_PRESET", "PARAM_BLOCKS", "MEMORY_KINDS", "CONTEXT_RANGE",
    "CONTEXTS", "disabled_options", "FLOPS_AXIS", "MEMORY_AXIS_HBM", "MEMORY_XLIM",
    "CALCULATOR_CHIPS", "FIGURE_PX",
]

#: The preset dropdown's entry for a hand-edited model; the preset a bare view starts from.
CUSTOM = "custom"
DEFAULT_PRESET = "LLaMA-3 70B"

#: Controls that describe the model; editing one switches the preset to "custom".
MODEL_FIELDS: tuple[str, ...] = ("n_layers", "d_model", "d_ff", "n_heads", "n_kv_heads",
                                 "vocab_size")

#: Parameter blocks shown as bars: (label, function of a ParamCount).
PARAM_BLOCKS: tuple[tuple[str, Callable[[ParamCount], int]], ...] = (
    ("embedding", lambda c: c.embedding),
    ("attn Q+O", lambda c: c.attention_q + c.attention_o),
    ("attn K+V", lambda c: c.attention_k + c.attention_v),
    ("MLP", lambda c: c.mlp),
    ("unembed", lambda c: c.unembedding),
)
PARAM_COLOUR = "#1f5fa8"

#: Memory kinds of a TrainingFootprint, stacked bottom to top, with their colours.
MEMORY_KINDS: tuple[tuple[str, str], ...] = (
    ("weights", "#1f5fa8"), ("gradients", "#6b9bd1"), ("master", "#d9731a"),
    ("moments", "#f0a860"), ("activations", "#5a9e2f"))
HBM_COLOUR = "#b00020"

#: Context lengths of the FLOPs panel (tokens): 256 to 2^20, ten points per doubling, 2^(k/10).
CONTEXT_RANGE = (256.0, 2.0 ** 20)
CONTEXTS: tuple[float, ...] = tuple(2.0 ** (k / 10) for k in range(80, 201))
#: The FLOPs panel's fixed y range (× 6·P_matmul).
FLOPS_AXIS = (1e-3, 1e2)
#: The memory axis runs to this multiple of one chip's HBM; the stacked bar spans x = ±0.3
#: (the HBM line ±0.5) in an x range that leaves the right part to the legend.
MEMORY_AXIS_HBM = 2.0
MEMORY_XLIM = (-0.5, 1.6)
MEMORY_BAR_HALF_WIDTH = 0.3

#: matplotlib's dash patterns for a 1 px line, in px on and off: "--" and ":".
DASHED, DOTTED = (3.7, 1.6), (1.0, 1.65)

#: The curves of the FLOPs panel: (name, colour, line width, dash pattern, legend label).
FLOPS_STYLES: tuple[tuple[str, str, float, tuple[float, float] | None, str], ...] = (
    ("matmul", "#1f5fa8", 2.0, None, "weight matmuls (6P)"),
    ("mlp", "#6b9bd1", 1.0, DASHED, "of which MLP"),
    ("attention", "#d9731a", 2.0, None, "attention core (12·L·T·H·d_h)"),
    ("total", "#000000", 1.0, DOTTED, "total"),
)

#: Size of the Jupyter figure in pixels (11 x 3.6 inches at 100 dpi).
FIGURE_PX = (1100, 360)

_DAY = 86400.0
_GIB = 2.0 ** 30

#: Chips offered: those with a bf16 figure (training runs in bf16).
CALCULATOR_CHIPS: tuple[str, ...] = tuple(n for n in chip_names() if "bf16" in get_chip(n).dtypes)


# --------------------------------------------------------------------------- state


@dataclass(frozen=True)
class CalculatorState:
    """Everything the calculator shows, in SI units.

    Attributes:
        preset, config: the model (``preset`` is carried along for display).
        params: parameter counts by kind (:class:`scalebook.transformer.ParamCount`).
        seq_len: context length T the attention FLOPs are counted at (tokens).
        tokens: the training token budget (tokens).
        per_token: forward FLOPs per token by block at ``seq_len``
            (:class:`scalebook.transformer.FlopsPerToken`; ``.training`` is 3 × forward).
        crossover: context where the attention core's FLOPs equal the MLP's (tokens).
        training_flops: ``per_token.training · tokens`` (FLOPs).
        memory: the whole run's training state plus the activations of ``global_batch``
            sequences (:class:`scalebook.training.TrainingFootprint`, mixed precision + Adam).
        global_batch: sequences per step; ``remat``: the activation policy.
        chip_name, n_chips, hbm_bytes: the cluster; ``mfu`` the utilisation assumed.
        memory_per_chip: ``memory.total / n_chips`` (perfect sharding, bytes);
            ``min_chips``: the fewest chips whose HBM holds ``memory.total``.
        seconds: time to train at ``mfu``; ``seconds_at_peak``: at 100% (s), both with the
            attention core in the FLOPs; ``seconds_6nd``: at ``mfu`` by ``6·P·tokens`` alone (s),
            the figure most published estimates quote.
    """

    preset: str
    config: TransformerConfig
    params: ParamCount
    seq_len: int
    tokens: float
    per_token: FlopsPerToken
    crossover: float
    training_flops: float
    memory: TrainingFootprint
    global_batch: int
    remat: str
    chip_name: str
    n_chips: int
    hbm_bytes: float
    mfu: float
    memory_per_chip: float
    min_chips: int
    seconds: float
    seconds_at_peak: float
    seconds_6nd: float = 0.0

    @property
    def days(self) -> float:
        return self.seconds / _DAY

    @property
    def fits(self) -> bool:
        return self.memory_per_chip <= self.hbm_bytes


def _int(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) \
            or value != int(value) or value < 1:
        raise ValueError(f"{name} must be a positive integer, got {value!r}")
    return int(value)


def calculator_state(*, preset: str = DEFAULT_PRESET, n_layers: int, d_model: int, d_ff: int,
                     n_heads: int, n_kv_heads: int, vocab_size: int, seq_len: int = 8192,
                     tokens_trillions: float = 15.0, global_batch: int = 2048,
                     remat: str = "full", chip: str = "H100", n_chips: int = 16384,
                     mfu: float = 0.4) -> CalculatorState:
    """Compute what the calculator shows for the model the fields describe.

    ``tokens_trillions`` is the budget in units of 1e12 tokens (the only non-SI input, as a
    reader types it); ``mfu`` must lie in (0, 1]. Raises ``ValueError`` for any bad input.
    """
    cfg = TransformerConfig(
        n_layers=_int("n_layers", n_layers), d_model=_int("d_model", d_model),
        d_ff=_int("d_ff", d_ff), n_heads=_int("n_heads", n_heads),
        n_kv_heads=_int("n_kv_heads", n_kv_heads), vocab_size=_int("vocab_size", vocab_size),
        name=preset if preset in PRESETS else "custom model")
    seq_len = _int("sequence length", seq_len)
    global_batch = _int("global batch", global_batch)
    n_chips = _int("chips", n_chips)
    if isinstance(tokens_trillions, bool) or not isinstance(tokens_trillions, (int, float)) \
            or not math.isfinite(tokens_trillions) or tokens_trillions <= 0:
        raise ValueError(f"the token budget must be a positive number of trillions, "
                         f"got {tokens_trillions!r}")
    tokens = float(tokens_trillions) * 1e12
    chip_obj = get_chip(chip)
    per_token = flops_per_token(cfg, seq_len)
    total = float(per_token.training) * tokens
    memory = training_memory(cfg, precision=MIXED_PRECISION_ADAM, global_batch=global_batch,
                             seq_len=seq_len, remat=remat)
    seconds = float(run_time(total, n_chips, chip_obj, mfu=mfu))  # validates mfu
    return CalculatorState(
        preset=preset, config=cfg, params=param_count(cfg), seq_len=seq_len, tokens=tokens,
        per_token=per_token, crossover=attention_crossover_context(cfg), training_flops=total,
        memory=memory, global_batch=global_batch, remat=remat.strip().lower(),
        chip_name=chip_obj.name, n_chips=n_chips, hbm_bytes=chip_obj.hbm_bytes,
        mfu=float(mfu), memory_per_chip=memory.total / n_chips,
        min_chips=fewest_chips(memory.total, chip_obj), seconds=seconds,
        seconds_at_peak=float(run_time(total, n_chips, chip_obj, mfu=1.0)),
        seconds_6nd=float(run_time(6.0 * param_count(cfg).total * tokens, n_chips, chip_obj,
                                   mfu=mfu)))


def linked_controls(values: Mapping[str, object], changed: str | None) -> dict[str, object]:
    """The controls to set after control ``changed`` moved: choosing a preset fills the model
    fields with its shape; editing a model field makes the preset "custom"."""
    if changed == "preset":
        preset = values.get("preset")
        cfg = PRESETS.get(preset) if isinstance(preset, str) else None
        return {} if cfg is None else {name: getattr(cfg, name) for name in MODEL_FIELDS}
    if changed in MODEL_FIELDS:
        return {"preset": CUSTOM}
    return {}


# --------------------------------------------------------------------------- series


def param_fractions(state: CalculatorState) -> list[float]:
    """Each :data:`PARAM_BLOCKS` entry's share of the total parameters (0 to 1)."""
    total = state.params.total
    return [fn(state.params) / total for _label, fn in PARAM_BLOCKS]


def flops_curves(state: CalculatorState, contexts: Sequence[float] = CONTEXTS
                 ) -> dict[str, list[float]]:
    """Training FLOPs per token over ``contexts`` (tokens), in units of the ``6·P_matmul``
    rule: ``matmul`` (1, flat), ``mlp`` (its part of it, flat), ``attention``
    (``12·L·T·H·d_h / 6·P_matmul``) and ``total`` (matmul + attention)."""
    six_p = 3.0 * state.per_token.matmul
    curves: dict[str, list[float]] = {"matmul": [], "mlp": [], "attention": [], "total": []}
    for context in contexts:
        f = flops_per_token(state.config, float(context))
        curves["matmul"].append(1.0)
        curves["mlp"].append(float(3.0 * f.mlp / six_p))  # one context: numbers, not arrays
        curves["attention"].append(float(3.0 * f.attention_core / six_p))
        curves["total"].append(float(3.0 * f.forward / six_p))
    return curves


def memory_stack(state: CalculatorState) -> list[tuple[str, str, float, float]]:
    """The memory bar's segments per chip in units of one chip's HBM, bottom to top:
    ``(kind, colour, bottom, height)`` with ``height = bytes of kind / n_chips / HBM``."""
    segments, bottom = [], 0.0
    for kind, colour in MEMORY_KINDS:
        height = getattr(state.memory, kind) / state.n_chips / state.hbm_bytes
        segments.append((kind, colour, bottom, height))
        bottom += height
    return segments


def calculator_series(state: CalculatorState) -> dict:
    """Every plotted number and text of the calculator's figure:

    ``shares`` (:func:`param_fractions`), ``contexts`` and ``curves`` (:func:`flops_curves`),
    ``crossover`` (tokens), ``now`` ([T, attention at T]), ``memory`` (:func:`memory_stack`),
    and the texts ``param_title``, ``flops_title``, ``memory_title`` and ``heading``.
    """
    p = state.params
    share = float(state.per_token.attention_share)
    verdict = "fits" if state.fits else "does not fit"
    off = " (off the scale)" if state.memory_per_chip > MEMORY_AXIS_HBM * state.hbm_bytes else ""
    return {
        "shares": param_fractions(state),
        "contexts": list(CONTEXTS),
        "curves": flops_curves(state),
        "crossover": float(state.crossover),
        "now": [float(state.seq_len),
                flops_curves(state, (float(state.seq_len),))["attention"][0]],
        "memory": memory_stack(state),
        "param_title": (f"{format_count(p.total)} parameters\n"
                        f"({format_integer(p.norms)} in norms)"),
        "flops_title": (f"T = {state.seq_len:,}: attention core {share:.0%} of FLOPs\n"
                        f"it passes the MLP at T = {format_integer(state.crossover)}"),
        "memory_title": (f"{format_bytes(state.memory_per_chip)} per chip, {verdict}{off}\n"
                         f"the run needs ≥ {format_integer(state.min_chips)} chips"),
        "heading": (f"{state.config.name}, {state.tokens / 1e12:g}T tokens of "
                    f"{state.seq_len:,}: {format_count(state.training_flops, unit='FLOPs')} → "
                    f"{format_seconds(state.seconds)} on {state.n_chips:,} {state.chip_name} at "
                    f"{state.mfu:.0%} MFU ({format_seconds(state.seconds_at_peak)} at peak)"),
    }


def calculator_summary(state: CalculatorState) -> str:
    """HTML: parameters by block, FLOPs per token (forward, backward; matmul, attention),
    training memory by kind, and the time to train."""
    p, f = state.params, state.per_token
    params = [(label, format_integer(fn(p))) for label, fn in PARAM_BLOCKS]
    params += [("norms", format_integer(p.norms)), ("total", format_integer(p.total))]
    flops = [(name, format_count(fwd, unit="FLOPs"), format_count(2 * fwd, unit="FLOPs"))
             for name, fwd in (("weight matmuls", float(f.matmul)),
                               ("attention core", float(f.attention_core)),
                               ("total", float(f.forward)))]
    mem = [(kind, format_bytes(getattr(state.memory, kind)),
            format_bytes(getattr(state.memory, kind) / state.n_chips)) for kind, _ in MEMORY_KINDS]
    style = "border-collapse:collapse;display:inline-block;vertical-align:top;margin-right:2em"
    return (
        "<div style='font-size:90%'>"
        f"<b>{html.escape(state.config.name)}</b>: "
        f"{format_count(state.training_flops, unit='FLOPs')} of training "
        "(6·P plus the attention core per token) "
        f"for {format_count(state.tokens)} tokens → <b>{format_seconds(state.seconds)}</b> on "
        f"{state.n_chips:,} {html.escape(state.chip_name)} at {state.mfu:.0%} MFU "
        f"({format_seconds(state.seconds_at_peak)} at peak; "
        f"{format_seconds(state.seconds_6nd)} by 6·N·D alone)<br>"
        + summary.table(("parameters", "count"), params, style=style)
        + summary.table((f"FLOPs per token at T = {state.seq_len:,}", "forward", "backward"),
                        flops, style=style)
        + summary.table((f"memory ({state.remat} remat, {state.global_batch:,} sequences)",
                         "whole run", "per chip"), mem, style=style)
        + "</div>")


# --------------------------------------------------------------------------- the live view


def calculator_chart(series: dict) -> dict:
    """:func:`calculator_series` as a :mod:`~scalebook.live.chart` description: parameter
    shares (bars), FLOPs per token against context (log-log) and the memory per chip (a
    stacked bar of shaded rectangles against the HBM line), as the Jupyter figure."""
    labels = [label for label, _ in PARAM_BLOCKS]
    params = chart.panel(
        series["param_title"], chart.axis("category", categories=labels),
        chart.axis("linear", 0.0, 1.0, "share of parameters",
                   ticks=chart.linear_ticks(0.0, 1.0, 0.2)),
        [chart.bars(series["shares"], [PARAM_COLOUR] * len(labels), [""] * len(labels))])
    contexts, curves = series["contexts"], series["curves"]
    flops = [chart.line(list(zip(contexts, curves[name])), colour, width=width, dash=dash,
                        label=label)
             for name, colour, width, dash, label in FLOPS_STYLES]
    x = series["crossover"]
    flops += [chart.line([[x, FLOPS_AXIS[0]], [x, FLOPS_AXIS[1]]], HBM_COLOUR, width=1,
                         dash=DOTTED),
              chart.points([series["now"]], FLOPS_STYLES[2][1], size=7)]
    flops_panel = chart.panel(
        series["flops_title"],
        chart.axis("log", *CONTEXT_RANGE, "context length T (tokens)",
                   ticks=chart.decade_ticks(*CONTEXT_RANGE, _power_of_ten)),
        chart.axis("log", *FLOPS_AXIS, "training FLOPs/token ÷ 6·P",
                   ticks=chart.decade_ticks(*FLOPS_AXIS, _power_of_ten)),
        flops, legend="upper left")
    w = MEMORY_BAR_HALF_WIDTH
    memory = [chart.area([[-w, bottom], [w, bottom], [w, bottom + height],
                          [-w, bottom + height]], colour, label=kind)
              for kind, colour, bottom, height in series["memory"]]
    memory.append(chart.line([[-0.5, 1.0], [0.5, 1.0]], HBM_COLOUR, width=2.0,
                             dash=[2 * d for d in DASHED], label="HBM of one chip"))
    memory_panel = chart.panel(
        series["memory_title"], chart.axis("linear", *MEMORY_XLIM, "", ticks=[]),
        chart.axis("linear", 0.0, MEMORY_AXIS_HBM, "memory per chip ÷ HBM",
                   ticks=chart.linear_ticks(0.0, MEMORY_AXIS_HBM, 0.5)),
        memory, legend="upper right")
    return chart.chart([params, flops_panel, memory_panel], width=FIGURE_PX[0],
                       height=FIGURE_PX[1], texts=[chart.text(series["heading"])])


def disabled_options(values: Mapping[str, object]) -> dict[str, list[list]]:
    """The model, remat and chip choices the calculator would refuse with the other controls
    at ``values``, each with the refusal's message
    (:func:`scalebook.live.options.refused_options`; the chips offered all have a bf16
    figure, so today a choice is refused only where the inputs already are at a limit)."""
    choices = {"preset": list(PRESETS), "remat": REMAT_MODES, "chip": CALCULATOR_CHIPS}
    return refused_options(calculator_state, values, choices, linked_controls)


def view(controls: dict, changed: str | None = None) -> dict:
    """The live widget's answer to its controls (the Jupyter names: ``preset``, the model
    fields :data:`MODEL_FIELDS`, ``seq_len``, ``tokens_trillions``, ``global_batch``,
    ``remat``, ``chip``, ``n_chips``, ``mfu``). A preset fills the model fields and editing a
    field makes the model "custom" (:func:`linked_controls`): those come back in
    ``controls``, and the state is computed with them (also with an error, ``{"error": ...,
    "controls": ...}``, as the Jupyter widget keeps a filled preset whose state it rejects).
    Model fields left out come from the preset (default :data:`DEFAULT_PRESET`)."""
    written = linked_controls(controls, changed)
    values = {**controls, **written}
    preset = PRESETS.get(values.setdefault("preset", DEFAULT_PRESET))
    missing = [name for name in MODEL_FIELDS if name not in values]
    if missing and preset is None:
        raise ValueError(f"a custom model needs {', '.join(missing)}")
    values.update({name: getattr(preset, name) for name in missing})
    try:
        state = calculator_state(**values)
    except ValueError as exc:
        if not written:
            raise
        # the preset filled its fields before another input was rejected: Jupyter keeps them
        return {"error": str(exc), "controls": written}
    out = {"summary_html": calculator_summary(state),
           "chart": calculator_chart(calculator_series(state)),
           "disabled": disabled_options(values)}
    if written:
        out["controls"] = written
    return out
