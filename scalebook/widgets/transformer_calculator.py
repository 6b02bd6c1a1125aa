"""A transformer calculator: parameters by block, FLOPs per token, training memory, days to train.

A reader picks a model (LLaMA-3 8B, 70B, 405B or any edited shape), a context length, a token
budget, a cluster (chip, count) and an MFU, and sees

- where the parameters are (embedding, attention with grouped-query K/V, MLP, unembedding),
- training FLOPs per token against context length: the flat ``6·P`` of the weight matmuls and
  the attention core's ``12·L·T·H·d_h`` rising through it, with the crossover marked,
- the training memory by kind (weights, gradients, master copy, Adam moments, activations),
  per chip when perfectly sharded over the cluster, against the chip's HBM,
- the time to train the budget at the chosen MFU, next to the (unreachable) time at peak.

Everything comes from :mod:`scalebook.transformer` (:func:`param_count`,
:func:`flops_per_token`, :func:`attention_crossover_context`) and :mod:`scalebook.training`
(:func:`training_memory`, :func:`fewest_chips`, :func:`run_time`).

Three layers, as for the other widgets (:mod:`scalebook.widgets`):

1. **state**: :func:`calculator_state` (pure) -> :class:`CalculatorState`;
2. **drawing**: :func:`draw_calculator` draws a state on three axes and returns its artists by
   name; :func:`update_calculator` moves them to another state (all axes have fixed ranges);
3. **widget**: :func:`transformer_calculator` -> :class:`TransformerCalculator` (an
   :class:`Explorer`). Choosing a preset fills the model fields; editing one makes it "custom".
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from typing import Sequence

import ipywidgets as widgets
import numpy as np

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
from ..units import format_bytes, format_seconds
from . import Explorer, _figure

__all__ = [
    "CalculatorState", "calculator_state", "draw_calculator", "update_calculator",
    "calculator_summary", "transformer_calculator", "TransformerCalculator",
    "MODEL_FIELDS", "CUSTOM", "PARAM_BLOCKS", "MEMORY_KINDS", "CONTEXT_RANGE",
]

#: The preset dropdown's entry for a hand-edited model.
CUSTOM = "custom"

#: Controls that describe the model; editing one switches the preset to "custom".
MODEL_FIELDS: tuple[str, ...] = ("n_layers", "d_model", "d_ff", "n_heads", "n_kv_heads",
                                 "vocab_size")

#: Parameter blocks shown as bars: (label, function of a ParamCount).
PARAM_BLOCKS: tuple[tuple[str, object], ...] = (
    ("embedding", lambda c: c.embedding),
    ("attn Q+O", lambda c: c.attention_q + c.attention_o),
    ("attn K+V", lambda c: c.attention_k + c.attention_v),
    ("MLP", lambda c: c.mlp),
    ("unembed", lambda c: c.unembedding),
)

#: Memory kinds of a TrainingFootprint, stacked bottom to top, with their colours.
MEMORY_KINDS: tuple[tuple[str, str], ...] = (
    ("weights", "#1f5fa8"), ("gradients", "#6b9bd1"), ("master", "#d9731a"),
    ("moments", "#f0a860"), ("activations", "#5a9e2f"))

#: Context lengths of the FLOPs panel (tokens) and its fixed y range (× 6·P_matmul).
CONTEXT_RANGE = (256.0, 2.0 ** 20)
_CONTEXTS = np.logspace(math.log10(CONTEXT_RANGE[0]), math.log10(CONTEXT_RANGE[1]), 121)
FLOPS_AXIS = (1e-3, 1e2)
#: The memory axis runs to this multiple of one chip's HBM.
MEMORY_AXIS_HBM = 2.0

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
        seconds: time to train at ``mfu``; ``seconds_at_peak``: at 100% (s).
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


def calculator_state(*, preset: str = "LLaMA-3 70B", n_layers: int, d_model: int, d_ff: int,
                     n_heads: int, n_kv_heads: int, vocab_size: int, seq_len: int = 8192,
                     tokens_trillions: float = 15.0, global_batch: int = 2048,
                     remat: str = "full", chip: str = "H100", n_chips: int = 16384,
                     mfu: float = 0.4) -> CalculatorState:
    """Compute what the calculator shows for the model the fields describe.

    ``tokens_trillions`` is the budget in units of 1e12 tokens (the only non-SI input, as a
    reader types it); ``mfu`` must lie in (0, 1]. Raises ``ValueError`` for any bad input.
    """
    sizes = {k: _int(k, v) for k, v in dict(
        n_layers=n_layers, d_model=d_model, d_ff=d_ff, n_heads=n_heads, n_kv_heads=n_kv_heads,
        vocab_size=vocab_size).items()}
    name = preset if preset in PRESETS else "custom model"
    cfg = TransformerConfig(**sizes, name=name)
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
        seconds_at_peak=float(run_time(total, n_chips, chip_obj, mfu=1.0)))


def param_fractions(state: CalculatorState) -> list[float]:
    """Each :data:`PARAM_BLOCKS` entry's share of the total parameters (0 to 1)."""
    total = state.params.total
    return [fn(state.params) / total for _label, fn in PARAM_BLOCKS]


def flops_curves(state: CalculatorState, contexts: np.ndarray = _CONTEXTS) -> dict[str, np.ndarray]:
    """Training FLOPs per token over ``contexts``, in units of the ``6·P_matmul`` rule:
    ``matmul`` (1, flat), ``mlp`` (its part of it, flat), ``attention`` (``12·L·T·H·d_h / 6P``)
    and ``total`` (matmul + attention)."""
    f = flops_per_token(state.config, contexts)
    six_p = 3.0 * state.per_token.matmul
    ones = np.ones_like(contexts, dtype=float)
    return {"matmul": ones, "mlp": ones * 3.0 * f.mlp / six_p,
            "attention": 3.0 * f.attention_core / six_p, "total": 3.0 * f.forward / six_p}


# --------------------------------------------------------------------------- drawing


def draw_calculator(axes: Sequence, state: CalculatorState) -> dict[str, object]:
    """Three panels with fixed axes: parameter share by block (bars, 0 to 1); training FLOPs
    per token against context length, log-log, in units of ``6·P_matmul`` (the weight
    matmuls at 1, the MLP below, the attention core rising, their sum, a dotted vertical at
    the attention/MLP crossover and a marker at this context); and the training memory per
    chip by kind (stacked bar) in units of the chip's HBM, with the HBM line at 1.

    Clears the axes. Returns the artists by name: ``param/<block>`` (Rectangle),
    ``flops/<curve>`` and ``crossover``, ``now``, ``hbm`` (Line2D), ``memory/<kind>``
    (Rectangle), ``param_title``, ``flops_title``, ``memory_title`` and ``heading`` (Text).
    """
    ax_p, ax_f, ax_m = axes
    figure = ax_p.figure
    for ax in axes:
        ax.clear()
    for text in list(figure.texts):
        text.remove()
    artists: dict[str, object] = {}
    labels = [label for label, _ in PARAM_BLOCKS]
    bars = ax_p.bar(range(len(labels)), [0.0] * len(labels), color="#1f5fa8", width=0.7)
    for label, bar in zip(labels, bars):
        artists[f"param/{label}"] = bar
    ax_p.set(ylim=(0, 1.0), xticks=range(len(labels)), ylabel="share of parameters")
    ax_p.set_xticklabels(labels, rotation=30, fontsize=8)
    ax_f.set(xscale="log", yscale="log", xlim=CONTEXT_RANGE, ylim=FLOPS_AXIS,
             xlabel="context length T (tokens)", ylabel="training FLOPs/token ÷ 6·P")
    styles = {"matmul": dict(color="#1f5fa8", lw=2, label="weight matmuls (6P)"),
              "mlp": dict(color="#6b9bd1", lw=1, ls="--", label="of which MLP"),
              "attention": dict(color="#d9731a", lw=2, label="attention core (12·L·T·H·d_h)"),
              "total": dict(color="black", lw=1, ls=":", label="total")}
    for name, style in styles.items():
        (artists[f"flops/{name}"],) = ax_f.plot([], [], **style)
    (artists["crossover"],) = ax_f.plot([], [], color="#b00020", lw=1, ls=":")
    (artists["now"],) = ax_f.plot([], [], color="#d9731a", marker="o", ls="", mec="black",
                                  ms=7, zorder=5)
    ax_f.legend(loc="upper left", fontsize=7, frameon=False)
    ax_f.grid(True, which="major", alpha=0.3)
    for kind, colour in MEMORY_KINDS:
        (artists[f"memory/{kind}"],) = ax_m.bar([0], [0.0], width=0.6, color=colour, label=kind)
    (artists["hbm"],) = ax_m.plot([-0.5, 0.5], [1.0, 1.0], color="#b00020", lw=2, ls="--",
                                  label="HBM of one chip")
    ax_m.set(xlim=(-0.5, 1.6), ylim=(0, MEMORY_AXIS_HBM), xticks=[],
             ylabel="memory per chip ÷ HBM")
    ax_m.legend(loc="upper right", fontsize=7, frameon=False)
    for key, ax in (("param_title", ax_p), ("flops_title", ax_f), ("memory_title", ax_m)):
        artists[key] = ax.text(0.0, 1.03, "", transform=ax.transAxes, fontsize=8)
    artists["heading"] = figure.text(0.01, 0.985, "", fontsize=9, va="top")
    update_calculator(axes, artists, state)
    return artists


def update_calculator(axes: Sequence, artists: dict, state: CalculatorState) -> list:
    """Move :func:`draw_calculator`'s artists to ``state`` (the axes never change); return
    every artist that depends on the state."""
    dynamic: list = []
    for (label, _fn), share in zip(PARAM_BLOCKS, param_fractions(state)):
        bar = artists[f"param/{label}"]
        bar.set_height(share)
        dynamic.append(bar)
    curves = flops_curves(state)
    for name, values in curves.items():
        artists[f"flops/{name}"].set_data(_CONTEXTS, values)
        dynamic.append(artists[f"flops/{name}"])
    x = state.crossover
    artists["crossover"].set_data([x, x], list(FLOPS_AXIS))
    now = flops_curves(state, np.array([float(state.seq_len)]))["attention"]
    artists["now"].set_data([state.seq_len], now)
    dynamic += [artists["crossover"], artists["now"]]
    bottom = 0.0
    for kind, _colour in MEMORY_KINDS:
        bar = artists[f"memory/{kind}"]
        height = getattr(state.memory, kind) / state.n_chips / state.hbm_bytes
        bar.set_y(bottom)
        bar.set_height(height)
        bottom += height
        dynamic.append(bar)
    p = state.params
    artists["param_title"].set_text(f"{p.total / 1e9:,.1f} billion parameters\n"
                                    f"({p.norms:,} in norms)")
    share = float(state.per_token.attention_share)
    artists["flops_title"].set_text(
        f"T = {state.seq_len:,}: attention core {share:.0%} of FLOPs\n"
        f"it passes the MLP at T = {state.crossover:,.0f}")
    verdict = "fits" if state.fits else "does not fit"
    off = " (off the scale)" if state.memory_per_chip > MEMORY_AXIS_HBM * state.hbm_bytes else ""
    artists["memory_title"].set_text(
        f"{state.memory_per_chip / _GIB:,.1f} GiB per chip, {verdict}{off}\n"
        f"the run needs ≥ {state.min_chips:,} chips")
    artists["heading"].set_text(
        f"{state.config.name}, {state.tokens / 1e12:g}T tokens of {state.seq_len:,}: "
        f"{state.training_flops:.2e} FLOPs → {state.days:,.1f} days on {state.n_chips:,} "
        f"{state.chip_name} at {state.mfu:.0%} MFU ({state.seconds_at_peak / _DAY:,.1f} at peak)")
    dynamic += [artists["hbm"], artists["param_title"], artists["flops_title"],
                artists["memory_title"], artists["heading"]]
    return dynamic


def calculator_summary(state: CalculatorState) -> str:
    """HTML: parameters by block, FLOPs per token (forward, backward; matmul, attention),
    training memory by kind, and the time to train."""
    p, f = state.params, state.per_token
    rows = "".join(f"<tr><td>{label}</td><td>{fn(p):,}</td></tr>" for label, fn in PARAM_BLOCKS)
    rows += f"<tr><td>norms</td><td>{p.norms:,}</td></tr>"
    rows += f"<tr><td><b>total</b></td><td><b>{p.total:,}</b></td></tr>"
    flops = "".join(
        f"<tr><td>{name}</td><td>{fwd:.3e}</td><td>{2 * fwd:.3e}</td></tr>"
        for name, fwd in (("weight matmuls", float(f.matmul)),
                          ("attention core", float(f.attention_core)),
                          ("total", float(f.forward))))
    mem = "".join(f"<tr><td>{kind}</td><td>{format_bytes(getattr(state.memory, kind))}</td>"
                  f"<td>{format_bytes(getattr(state.memory, kind) / state.n_chips)}</td></tr>"
                  for kind, _ in MEMORY_KINDS)
    table = ("<table style='border-collapse:collapse;display:inline-block;vertical-align:top;"
             "margin-right:2em'>")
    return (
        "<div style='font-size:90%'>"
        f"<b>{html.escape(state.config.name)}</b>: {state.training_flops:.3e} training FLOPs "
        f"for {state.tokens:.3g} tokens → <b>{state.days:,.1f} days</b> on {state.n_chips:,} "
        f"{html.escape(state.chip_name)} at {state.mfu:.0%} MFU "
        f"({format_seconds(state.seconds_at_peak)} at peak)<br>"
        f"{table}<tr><th>parameters</th><th>count</th></tr>{rows}</table>"
        f"{table}<tr><th>FLOPs per token at T = {state.seq_len:,}</th><th>forward</th>"
        f"<th>backward</th></tr>{flops}</table>"
        f"{table}<tr><th>memory ({html.escape(state.remat)} remat, {state.global_batch:,} "
        f"sequences)</th><th>whole run</th><th>per chip</th></tr>{mem}</table></div>")


# --------------------------------------------------------------------------- widget


class TransformerCalculator(Explorer):
    """The calculator's :class:`Explorer`: a preset fills the model fields, editing a field
    switches the preset to "custom"."""

    def link_controls(self, changed) -> None:
        if changed is self.controls["preset"]:
            cfg = PRESETS.get(self.controls["preset"].value)
            if cfg is not None:
                self.set_quietly({name: getattr(cfg, name) for name in MODEL_FIELDS})
        elif any(changed is self.controls[name] for name in MODEL_FIELDS):
            self.set_quietly({"preset": CUSTOM})


def _int_box(description: str, value: int, width: str = "16%") -> widgets.IntText:
    return widgets.IntText(value=int(value), description=description,
                           style={"description_width": "initial"},
                           layout=widgets.Layout(width=width))


def transformer_calculator(preset: str = "LLaMA-3 70B", *, seq_len: int = 8192,
                           tokens_trillions: float = 15.0, global_batch: int = 2048,
                           remat: str = "full", chip: str = "H100", n_chips: int = 16384,
                           mfu: float = 0.4, config: TransformerConfig | None = None,
                           dpi: float = 100) -> TransformerCalculator:
    """A transformer calculator for ``preset`` (or ``config``).

    Controls (``w.controls``): ``preset``, the model fields :data:`MODEL_FIELDS`, ``seq_len``,
    ``tokens_trillions``, ``global_batch`` (sequences, for the activations), ``remat``,
    ``chip``, ``n_chips`` and ``mfu``. ``w.state`` is a :class:`CalculatorState`. Raises
    ``ValueError`` for bad initial inputs.
    """
    if config is None:
        if preset not in PRESETS:
            raise ValueError(f"unknown preset {preset!r}; known: {', '.join(PRESETS)}")
        config = PRESETS[preset]
    else:
        preset = CUSTOM
    chip_name = get_chip(chip).name
    if chip_name not in CALCULATOR_CHIPS:
        raise ValueError(f"{chip_name} has no bf16 figure; choose one of "
                         f"{', '.join(CALCULATOR_CHIPS)}")
    controls = {
        "preset": widgets.Dropdown(options=[*PRESETS, CUSTOM], value=preset,
                                   description="model"),
        **{name: _int_box(name, getattr(config, name)) for name in MODEL_FIELDS},
        "seq_len": _int_box("context T", seq_len, "20%"),
        "tokens_trillions": widgets.FloatText(value=float(tokens_trillions),
                                              description="tokens (trillions)",
                                              style={"description_width": "initial"},
                                              layout=widgets.Layout(width="24%")),
        "global_batch": _int_box("batch (sequences)", global_batch, "24%"),
        "remat": widgets.Dropdown(options=REMAT_MODES, value=remat, description="remat"),
        "chip": widgets.Dropdown(options=CALCULATOR_CHIPS, value=chip_name, description="chip"),
        "n_chips": _int_box("chips", n_chips, "20%"),
        "mfu": widgets.FloatSlider(value=float(mfu), min=0.05, max=1.0, step=0.01,
                                   description="MFU", readout_format=".2f"),
    }
    figure = _figure((11, 3.6), dpi, ncols=3, left=0.06, right=0.985, bottom=0.2, top=0.78,
                     wspace=0.32)
    rows = [("preset", "seq_len", "tokens_trillions"), MODEL_FIELDS,
            ("global_batch", "remat"), ("chip", "n_chips", "mfu")]
    return TransformerCalculator(
        controls, figure, calculator_state,
        lambda fig, state: draw_calculator(fig.axes, state), calculator_summary,
        layout_rows=rows,
        refresh=lambda fig, artists, state: update_calculator(fig.axes, artists, state))
