"""Compute-optimal training in one page: how to split a FLOP budget between parameters and tokens.

Training a dense Transformer of ``N`` parameters on ``D`` tokens costs ``C = 6·N·D`` FLOPs
(:func:`scalebook.training.training_flops_from_params`). Hoffmann et al. (2022, "Training
Compute-Optimal Large Language Models", the "Chinchilla" paper) fit the final loss as

    L(N, D) = E + A / N^α + B / D^β                  (nats per token)

with E = 1.69, A = 406.4, B = 410.7, α = 0.34, β = 0.28 (their approach 3), and found that for a
fixed ``C`` the loss is lowest with ``N`` and ``D`` growing about equally, ``D ≈ 20·N`` (their
approaches 1 and 2; the published approach-3 constants themselves put the minimum nearer 100
tokens per parameter, :func:`loss_optimal`). With a fixed ratio ``r = D / N`` the budget fixes
both:

    N_opt = sqrt(C / (6·r))    D_opt = r · N_opt     (parameters, tokens)

Units: parameters and tokens are counts, FLOPs are FLOPs, loss is nats per token.
"""

from __future__ import annotations

from dataclasses import dataclass

from scalebook._np import np

from scalebook.validation import positive

__all__ = [
    "CHINCHILLA_TOKENS_PER_PARAM",
    "ChinchillaFit",
    "CHINCHILLA_FIT",
    "BESIROGLU_FIT",
    "loss_optimal",
    "ComputeOptimal",
    "compute_optimal",
    "tokens_per_param",
    "chinchilla_loss",
]

ArrayLike = float | np.ndarray

#: Tokens per parameter of a compute-optimal dense model (Hoffmann et al. 2022), rounded.
CHINCHILLA_TOKENS_PER_PARAM = 20.0


@dataclass(frozen=True)
class ChinchillaFit:
    """The constants of ``L(N, D) = E + A / N^α + B / D^β`` (nats per token)."""

    E: float
    A: float
    B: float
    alpha: float
    beta: float


#: Hoffmann et al. (2022), section 3.3 (approach 3, parametric fit). Its own minimum sits far
#: from the paper's 20 tokens per parameter (98 at 1e24 FLOPs): see :func:`loss_optimal`.
CHINCHILLA_FIT = ChinchillaFit(E=1.69, A=406.4, B=410.7, alpha=0.34, beta=0.28)

#: Besiroglu et al. (2024, "Chinchilla scaling: a replication attempt", arXiv:2404.10102), who
#: re-fit approach 3 to data reconstructed from the paper's figure and found the published
#: constants inconsistent with approaches 1 and 2; their fit puts the minimum near 20 tokens
#: per parameter, as those do.
BESIROGLU_FIT = ChinchillaFit(E=1.8172, A=482.01, B=2085.43, alpha=0.3478, beta=0.3658)


@dataclass(frozen=True)
class ComputeOptimal:
    """What a FLOP budget buys at a fixed tokens-per-parameter ratio.

    Attributes: ``flops`` C (FLOPs), ``params`` N (parameters), ``tokens`` D (tokens),
    ``tokens_per_param`` r = D / N.
    """

    flops: ArrayLike
    params: ArrayLike
    tokens: ArrayLike
    tokens_per_param: float


def compute_optimal(flops: ArrayLike, *,
                    tokens_per_param: float = CHINCHILLA_TOKENS_PER_PARAM) -> ComputeOptimal:
    """Parameters and tokens that spend ``flops`` at ``tokens_per_param`` tokens per parameter.

    ``N = sqrt(C / (6·r))``, ``D = r·N``, so that ``6·N·D = C``. LLaMA-3 405B's 3.8e25 FLOPs at
    r = 20: N = sqrt(3.8e25 / 120) = 5.6e11 parameters on 1.1e13 tokens.
    """
    C = positive(flops, "flops")
    r = positive(tokens_per_param, "tokens_per_param")
    if np.ndim(r):
        raise ValueError("tokens_per_param must be a single number")
    N = np.sqrt(C / (6.0 * r))
    return ComputeOptimal(flops=C, params=N, tokens=r * N, tokens_per_param=float(r))


def loss_optimal(flops: float, *, fit: ChinchillaFit = CHINCHILLA_FIT) -> ComputeOptimal:
    """The split of ``flops`` that minimises ``fit``'s loss ``E + A/N^α + B/D^β`` at
    ``6·N·D = C``.

    Setting ``dL/dN = 0`` with ``D = C / (6N)``: ``α·A / N^α = β·B / D^β``, so

        N_opt = G · (C/6)^(β/(α+β)),   G = (α·A / (β·B))^(1/(α+β)),   D_opt = C / (6·N_opt)

    (parameters, tokens). With Hoffmann et al.'s published constants (:data:`CHINCHILLA_FIT`)
    1e24 FLOPs go to 41e9 parameters on 4.0e12 tokens, 98 tokens per parameter, not the
    paper's own 20; Besiroglu et al.'s re-fit (:data:`BESIROGLU_FIT`) gives 96e9 on 1.7e12,
    18 per parameter.
    """
    if not isinstance(fit, ChinchillaFit):
        raise ValueError(f"fit must be a ChinchillaFit, got {type(fit).__name__}")
    C = positive(flops, "flops")
    if np.ndim(C):
        raise ValueError("flops must be a single number")
    a, b = fit.alpha, fit.beta
    G = (a * fit.A / (b * fit.B)) ** (1.0 / (a + b))
    N = G * (C / 6.0) ** (b / (a + b))
    D = C / (6.0 * N)
    return ComputeOptimal(flops=C, params=N, tokens=D, tokens_per_param=float(D / N))


def tokens_per_param(n_params: ArrayLike, tokens: ArrayLike) -> ArrayLike:
    """``D / N``: how far a run is from compute-optimal (about 20). LLaMA-3 8B on 15e12
    tokens: 1,868 tokens per parameter, far past it (the model is trained for inference)."""
    return positive(tokens, "tokens") / positive(n_params, "n_params")


def chinchilla_loss(n_params: ArrayLike, tokens: ArrayLike, *,
                    fit: ChinchillaFit = CHINCHILLA_FIT) -> ArrayLike:
    """The fitted loss ``E + A / N^α + B / D^β`` in nats per token (Hoffmann et al. 2022).

    Only meaningful for models and data like the paper's (dense, MassiveText); use it to
    compare splits of one budget, not to predict another team's loss. The published constants
    put the loss-minimising ratio far above 20 (98 at 1e24 FLOPs, :func:`loss_optimal`);
    Besiroglu et al. (2024) re-fit the data and found ratios close to 20
    (:data:`BESIROGLU_FIT`), so the rule of thumb is the paper's approaches 1 and 2.
    Chinchilla itself (70e9 parameters, 1.4e12 tokens): 1.94 nats per token.
    """
    if not isinstance(fit, ChinchillaFit):
        raise ValueError(f"fit must be a ChinchillaFit, got {type(fit).__name__}")
    N = positive(n_params, "n_params")
    D = positive(tokens, "tokens")
    return fit.E + fit.A / N ** fit.alpha + fit.B / D ** fit.beta
