"""scalebook: the reference solver behind the course "Scaling ML Models on Accelerators".

Every number in the book, the widgets, the homework solutions and the autograder's expected
answers comes from this package. Modules, one idea each (tests/test_package_docs.py checks
that this list names every module and subpackage):

- :mod:`scalebook.hardware` — the chip catalog and dtype sizes
- :mod:`scalebook.roofline` — FLOPs, bytes, intensity, time bounds (matmuls, element-wise ops)
- :mod:`scalebook.topology` — TPU slices and pods, GPU nodes and clusters, as objects
- :mod:`scalebook.torus` — TPU slices as shipped: shapes, wraparound, mesh axes on physical ones
- :mod:`scalebook.collectives` — time of collectives on rings, lines, tori and GPU nodes
- :mod:`scalebook.networks` — GPU cluster networks (leaf and spine levels, bisection)
- :mod:`scalebook.published` — published measurements of real systems beside the solver's numbers
- :mod:`scalebook.sharding` — sharding notation, meshes and the sharded-matmul planner
- :mod:`scalebook.parallelism` — data, FSDP, tensor and pipeline parallelism
- :mod:`scalebook.transformer` — parameter counts, FLOPs and KV caches of decoders
- :mod:`scalebook.training` — a training layout's memory, step time and MFU across chips
- :mod:`scalebook.bucketing` — data parallelism's gradient buckets overlapped with the backward pass
- :mod:`scalebook.offload` — ZeRO-Offload, activation offload, ZeRO++ and fp8 communication
- :mod:`scalebook.reliability` — failures at scale: checkpoints, interruption rates, goodput
- :mod:`scalebook.scaling_laws` — compute-optimal splits of a FLOP budget (parameters vs tokens)
- :mod:`scalebook.inference` — serving: prefill, decode, the KV cache, latency vs throughput, cost
- :mod:`scalebook.moe` — mixtures of experts: counts, FLOPs, routing, expert parallelism
- :mod:`scalebook.long_context` — context parallelism: ring and all-to-all attention over chips
- :mod:`scalebook.service` — serving systems: SLOs, batching, paged and prefix caches, chunked
  prefill, speculative decoding, a serving simulator and capacity planning
- :mod:`scalebook.tinytransformer` — a small JAX Transformer trained five ways on a mesh
- :mod:`scalebook.decoding` — a tiny JAX decoder with a KV cache, timed beside the serving solver
- :mod:`scalebook.step_fit` — two step-time models told apart on timings (free overhead, efficiency)
- :mod:`scalebook.moe_jax` — an MoE layer and ring attention in JAX on a 1-D device mesh
- :mod:`scalebook.service_jax` — paged attention, speculative decoding and continuous batching in JAX
- :mod:`scalebook.hlo` — the collectives in compiled XLA (HLO) text, named by mesh axis
- :mod:`scalebook.picture` — a figure with its text alternative, carried inside its PNG
- :mod:`scalebook.diagrams` — figures of the course's mechanisms, drawn from the solver's objects
- :mod:`scalebook.units` — printing SI quantities for people
- :mod:`scalebook.validation` — the input checks every module shares
- :mod:`scalebook.checks` — answer checks the homework's test cells call
- :mod:`scalebook.variants` — per-student variants of a homework: same problems, own numbers
- :mod:`scalebook.homework` — what each homework varies per student, its parts and cells, and the
  catalog of other readings every part is asked
- :mod:`scalebook.practice` — every worked problem again with new numbers, and a set per chapter
- :mod:`scalebook.live` — the widgets without a kernel: what each shows, as JSON, for the page
- :mod:`scalebook.widgets` — interactive explorers for the book (needs ipywidgets, matplotlib)
- :mod:`scalebook._np` — ``np`` for the solver: NumPy, or the scalar stand-in where it is absent
- :mod:`scalebook._scalar_np` — that stand-in: NumPy's scalar calls for the browser (Pyodide)

All quantities are SI (seconds, bytes, FLOPs/s) and FLOPs/s are dense.
"""

from .hardware import CATALOG, Chip, bytes_per_element, chip_names, get_chip

__all__ = ["CATALOG", "Chip", "bytes_per_element", "chip_names", "get_chip"]
__version__ = "0.1.0"
