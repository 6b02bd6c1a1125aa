"""hw5-transformers: the inputs each student gets their own values of.

Problem by problem (the first value of each choice is the one the book prints):

- P1–P2, counting a LLaMA-style model's parameters and FLOPs per token: the model, one of the
  catalog's configs (``scalebook.transformer.llama3_8b`` or ``llama3_70b``), and P2's context
  T. P2's matmul weights P are derived from the model (everything but the embedding table and
  the norms). The 405B is left out of P1–P2: its unembedding (V·D) is under 1% of its
  parameters, inside P1 (c)'s tolerance, and its attention core at T = 4,096 is under 5% of its
  matmul FLOPs, so the "6·P alone" slip of P2 (c) would pass.
- P3, heads wider than D / H: the context T and the layer count L. D, H and d_h stay the
  Gemma-7B-like figures, since the problem is about H·d_h exceeding D.
- P4, training memory: the model (LLaMA-3 70B or 405B, from the catalog) and the sequence
  length T. The GPU stays the H100 (the answer is named ``min_h100s``); its HBM comes from
  the catalog.
- P5, step time and MFU on H100s: the GPU count, the global batch and the measured step time.
  Well posed: see :func:`well_posed`.
- P6, the LLaMA 3 405B run: the GPU count and the MFU of part (b). N, the token count and the
  GPU-hours are the published figures of that run, so part (c) does not vary.
- P7, a compute-optimal budget: the FLOP budget C (the ratio stays Hoffmann et al.'s 20).
"""

from __future__ import annotations

from typing import Any, Mapping

from ..hardware import get_chip
from ..training import llama3_405b
from ..transformer import TransformerConfig, llama3_8b, llama3_70b, param_count
from ..variants import Choice, VariantSpec

#: The catalog's configs, by the name the problem text prints.
MODELS = {
    "LLaMA-3 8B": llama3_8b,
    "LLaMA-3 70B": llama3_70b,
    "LLaMA-3 405B": llama3_405b,
}

PARAMETERS = {
    "q1_model": Choice(("LLaMA-3 8B", "LLaMA-3 70B"), "model"),
    "q2_T": Choice((8192, 4096, 16384, 32768), "T", "tokens", fmt="{:,}"),
    "q3_L": Choice((28, 24, 32), "L", "layers"),
    "q3_T": Choice((8192, 4096, 16384), "T", "tokens", fmt="{:,}"),
    "q4_model": Choice(("LLaMA-3 70B", "LLaMA-3 405B"), "model"),
    "q4_T": Choice((8192, 4096, 2048), "T", "tokens", fmt="{:,}"),
    "q5_gpus": Choice((256, 128, 512, 1024), "GPUs", fmt="{:,}"),
    "q5_seqs": Choice((1024, 512, 2048), "sequences", fmt="{:,}"),
    "q5_step": Choice((3.4, 1.2, 1.7, 2.5, 4.6, 6.8, 9.5, 13.0, 0.9), "step time", "s"),
    "q6_gpus": Choice((16384, 8192, 24576, 32768), "GPUs", fmt="{:,}"),
    "q6_mfu": Choice((0.40, 0.35, 0.30, 0.43), "MFU"),
    "q7_C": Choice((1e24, 3e23, 5e24, 2e25), "C", "FLOPs"),
}


def _dims(prefix: str, cfg: TransformerConfig, names: tuple[str, ...]) -> dict[str, int]:
    """The model's sizes the problem prints, as ``<prefix>_<name>``."""
    fields = {"D": cfg.d_model, "L": cfg.n_layers, "H": cfg.n_heads, "K": cfg.n_kv_heads,
              "dh": cfg.d_head, "F": cfg.d_ff, "V": cfg.vocab_size}
    return {f"{prefix}_{n}": fields[n] for n in names}


def derive(p: Mapping[str, Any]) -> dict[str, Any]:
    """The model sizes each problem states (from the catalog's configs) and the H100's figures."""
    m1, m4 = MODELS[p["q1_model"]](), MODELS[p["q4_model"]]()
    out: dict[str, Any] = _dims("q1", m1, ("D", "L", "H", "K", "dh", "F", "V"))
    out["q2_P"] = param_count(m1).matmul
    out["q4_P"] = param_count(m4).total
    out.update(_dims("q4", m4, ("D", "L", "H")))
    out["q5_P"] = param_count(llama3_8b()).matmul
    h100 = get_chip("H100")
    out["h100_hbm"] = h100.hbm_bytes
    out["h100_bf16_flops"] = h100.flops("bf16")
    return out


def well_posed(v: Mapping[str, Any]) -> bool:
    """No draw where a slip that a hint names lands within the 5% tolerance of the answer.

    - P5 (c)-(d): the MFU of the measured step lies between 0.25 and 0.6, so it is a
      plausible measurement, the HFU (8/6 of it) stays under 1, and the "percentage" slip and
      the x2 / x0.5 slips stay distinct from the answer.
    """
    tokens = v["q5_seqs"] * 8192
    mfu = 6 * v["q5_P"] * tokens / (v["q5_gpus"] * v["h100_bf16_flops"] * v["q5_step"])
    return 0.25 <= mfu <= 0.6


SPEC = VariantSpec(
    assignment="hw5-transformers",
    parameters=PARAMETERS,
    derive=derive,
    well_posed=well_posed,
    derived_labels={
        "q1_D": ("D", ""), "q1_L": ("L", "layers"), "q1_H": ("H", "query heads"),
        "q1_K": ("K", "key/value heads"), "q1_dh": ("d_h", ""), "q1_F": ("F", ""),
        "q1_V": ("V", ""), "q2_P": ("P", "matmul weights"),
        "q4_P": ("P", "parameters"), "q4_D": ("D", ""), "q4_L": ("L", "layers"),
        "q4_H": ("H", "query heads"),
        "h100_hbm": ("H100 HBM", "bytes"), "h100_bf16_flops": ("H100 dense bf16", "FLOPs/s"),
        "q5_P": ("P", "matmul weights"),
    },
)
