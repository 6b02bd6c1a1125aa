"""A Transformer's costs (Part 5): where its parameters sit, attention's share of the FLOPs as
the context grows, a training step's time by kind, and one FLOP budget's split between
parameters and tokens, from :mod:`scalebook.transformer`, :mod:`scalebook.training` and
:mod:`scalebook.scaling_laws`.

- :func:`parameter_breakdown`: stacked bars of embedding, attention, MLP and unembedding;
- :func:`attention_share`: the attention core's share of the forward FLOPs against the context,
  with each model's crossover against the MLP;
- :func:`step_time_stack`: a planned step's compute, exposed communication and bubble per layout;
- :func:`isoflop_loss`: the fitted loss along ``6·N·D = C`` against the parameters, with the
  fit's minimum and the 20-tokens-per-parameter rule.
"""

from __future__ import annotations

from typing import Mapping

import numpy as np

from .. import scaling_laws, transformer
from ..picture import Picture
from ..training import TrainingPlan
from ..transformer import TransformerConfig
from ..units import format_integer, format_scientific, format_seconds
from ._draw import BLUE, GREEN, GREY, ORANGE, RED, new_figure

_PARTS = (("embedding", GREY), ("attention", BLUE), ("mlp", ORANGE), ("unembedding", GREEN))


def parameter_breakdown(models: Mapping[str, TransformerConfig]) -> Picture:
    """Horizontal stacked bars, billions of parameters per model, by where they sit
    (:func:`scalebook.transformer.param_count`: embedding, attention, MLP, unembedding)."""
    labels = list(models)
    counts = {label: transformer.param_count(models[label]) for label in labels}
    figure = new_figure(7.5, 0.55 * len(labels) + 1.3)
    ax = figure.add_subplot()
    left = np.zeros(len(labels))
    for part, colour in _PARTS:
        values = np.array([getattr(counts[l], part) for l in labels]) / 1e9
        ax.barh(labels, values, left=left, color=colour, label="MLP" if part == "mlp" else part)
        left += values
    ax.set(xscale="log", xlabel="parameters (billions, log scale)")
    ax.set_xlim(left=min(getattr(counts[l], "embedding") for l in labels) / 1e9 / 2)
    ax.invert_yaxis()
    ax.legend(fontsize=8, ncol=4, loc="lower center", bbox_to_anchor=(0.5, 1.0), frameon=False)
    rows = []
    for label in labels:
        c = counts[label]
        parts = ", ".join(f"{'MLP' if part == 'mlp' else part} {getattr(c, part) / 1e9:.2f}"
                          for part, _ in _PARTS)
        rows.append(f"{label}: {parts} (MLP {c.mlp / c.total:.0%} of "
                    f"{format_integer(c.total)})")
    alt = ("Stacked horizontal bar chart of parameters in billions, by where they sit: "
           + "; ".join(rows) + ".")
    return Picture(figure, alt)


def attention_share(models: Mapping[str, TransformerConfig], contexts: np.ndarray, *,
                    mark: int) -> Picture:
    """Lines: the attention core's share of the forward FLOPs per token
    (:func:`scalebook.transformer.flops_per_token`) against the context length; dotted, each
    model's :func:`~scalebook.transformer.attention_crossover_context` (core = MLP); a grey
    line at ``mark`` tokens."""
    T = np.asarray(contexts, dtype=float)
    figure = new_figure(7.0, 3.4)
    ax = figure.add_subplot()
    rows = []
    for (name, cfg), colour in zip(models.items(), (GREEN, BLUE, ORANGE, RED) * 3):
        share = np.asarray(transformer.flops_per_token(cfg, T).attention_share)
        ax.plot(T, share, color=colour, lw=2, label=name)
        cross = transformer.attention_crossover_context(cfg)
        ax.axvline(cross, color=colour, ls=":", lw=1)
        at_mark = float(transformer.flops_per_token(cfg, mark).attention_share)
        rows.append(f"{name}: {at_mark:.0%} at {format_integer(mark)} tokens, "
                    f"{share[-1]:.0%} at {format_integer(round(T[-1]))}, crossing the MLP at "
                    f"{format_integer(round(cross))}")
    ax.axvline(mark, color="0.3", lw=1)
    ax.text(mark * 1.05, 0.9, format_integer(mark), fontsize=8, color="0.3")
    ax.set(xscale="log", xlabel="context length T (tokens)", ylim=(0, 1),
           ylabel="attention core's share of FLOPs")
    ax.legend(fontsize=8, loc="upper left", frameon=False)
    ax.grid(True, alpha=0.3)
    ax.set_title("Attention's share grows with the context; dotted: where it equals the MLP",
                 fontsize=9)
    alt = ("Line chart, log context axis from "
           f"{format_integer(round(T[0]))} to {format_integer(round(T[-1]))} tokens: the "
           "attention core's share of the forward FLOPs per token rises with the context. "
           + "; ".join(rows) + ".")
    return Picture(figure, alt)


def step_time_stack(plans: Mapping[str, TrainingPlan]) -> Picture:
    """Stacked bars per layout: a planned step's compute at peak (rematerialisation included),
    exposed communication and pipeline bubble (:attr:`TrainingPlan.step_time`), MFU on top."""
    labels = list(plans)
    figure = new_figure(7.5, 3.8)
    ax = figure.add_subplot()
    bottoms = np.zeros(len(labels))
    kinds = (("compute", "compute", BLUE), ("comms_exposed", "exposed communication", ORANGE),
             ("bubble", "pipeline bubble", GREY))
    for attr, name, colour in kinds:
        values = np.array([getattr(plans[l].step_time, attr) for l in labels])
        ax.bar(labels, values, bottom=bottoms, color=colour, label=name)
        bottoms += values
    for k, label in enumerate(labels):
        ax.text(k, bottoms[k], f"MFU {plans[label].mfu:.0%}", ha="center", va="bottom",
                fontsize=8)
    ax.set(ylabel="seconds per step", ylim=(0, bottoms.max() * 1.15))
    ax.legend(fontsize=8, loc="upper left")
    ax.tick_params(axis="x", labelsize=8)
    def seconds(t: float) -> str:
        return format_seconds(t) if t > 0 else "none"

    rows = [f"{l}: compute {seconds(plans[l].step_time.compute)}, exposed communication "
            f"{seconds(plans[l].step_time.comms_exposed)}, bubble "
            f"{seconds(plans[l].step_time.bubble)}, step "
            f"{seconds(plans[l].step_time.total)}, MFU {plans[l].mfu:.0%}"
            + ("" if plans[l].fits else " (does not fit in HBM)") for l in labels]
    alt = "Stacked bar chart of one training step's time by kind, per layout: " \
        + "; ".join(rows) + "."
    return Picture(figure, alt)


def isoflop_loss(flops: float, *, rule: float = scaling_laws.CHINCHILLA_TOKENS_PER_PARAM
                 ) -> Picture:
    """The fitted loss ``L(N, C/(6N))`` against the parameters N, for the published Chinchilla
    fit and Besiroglu et al.'s re-fit, each with its minimum (:func:`scaling_laws.loss_optimal`),
    and the rule's N (:func:`scaling_laws.compute_optimal`) as a vertical line."""
    rule_opt = scaling_laws.compute_optimal(flops, tokens_per_param=rule)
    N = np.logspace(np.log10(float(rule_opt.params)) - 1.2, np.log10(float(rule_opt.params)) + 1.2,
                    200)
    figure = new_figure(7.0, 3.6)
    ax = figure.add_subplot()
    rows = []
    for (name, fit), colour in zip((("published fit", scaling_laws.CHINCHILLA_FIT),
                                    ("re-fit (Besiroglu et al.)", scaling_laws.BESIROGLU_FIT)),
                                   (BLUE, ORANGE)):
        loss = scaling_laws.chinchilla_loss(N, flops / (6 * N), fit=fit)
        best = scaling_laws.loss_optimal(flops, fit=fit)
        ax.plot(N, loss, color=colour, lw=2, label=name)
        best_loss = float(scaling_laws.chinchilla_loss(best.params, best.tokens, fit=fit))
        ax.plot(best.params, best_loss, "o", color=colour)
        rows.append(f"the {name} is lowest at {float(best.params) / 1e9:.0f} billion parameters "
                    f"on {float(best.tokens) / 1e12:.1f} trillion tokens "
                    f"({best.tokens_per_param:.0f} per parameter)")
    ax.axvline(float(rule_opt.params), color="0.3", ls="--", lw=1)
    ax.text(float(rule_opt.params) * 1.08, ax.get_ylim()[1], f"{rule:g} tokens per parameter",
            fontsize=8, color="0.3", va="top")
    ax.set(xscale="log", xlabel="parameters N (the tokens are C / 6N)",
           ylabel="fitted loss (nats per token)")
    ax.set_title(f"One budget, C = {format_scientific(flops)} FLOPs, split between parameters "
                 "and tokens", fontsize=9)
    ax.legend(fontsize=8, loc="upper center", frameon=False)
    alt = (f"Line chart of the fitted Chinchilla loss along one budget of "
           f"{format_scientific(flops)} FLOPs against the parameters (log scale), tokens "
           f"C / 6N: " + "; ".join(rows) + f"; the {rule:g}-tokens-per-parameter rule "
           f"(dashed) gives {float(rule_opt.params) / 1e9:.0f} billion parameters on "
           f"{float(rule_opt.tokens) / 1e12:.1f} trillion tokens.")
    return Picture(figure, alt)
