"""scalebook: the reference solver behind the course "Scaling ML Models on Accelerators".

Every number in the book, the widgets, the homework solutions and the autograder's expected
answers comes from this package. Modules, one idea each:

- :mod:`scalebook.hardware` — the chip catalog and dtype sizes
- :mod:`scalebook.roofline` — FLOPs, bytes, intensity, time bounds (matmuls, element-wise ops)
- :mod:`scalebook.topology` — TPU slices and pods, GPU nodes and clusters, as objects
- :mod:`scalebook.collectives` — time of collectives on rings, lines, tori and GPU nodes
- :mod:`scalebook.networks` — GPU cluster networks (leaf and spine levels, bisection)
- :mod:`scalebook.sharding` — sharding notation, meshes and the sharded-matmul planner
- :mod:`scalebook.parallelism` — data, FSDP, tensor and pipeline parallelism
- :mod:`scalebook.transformer` — parameter counts, FLOPs and KV caches of decoders
- :mod:`scalebook.units` — printing SI quantities for people
- :mod:`scalebook.validation` — the input checks every module shares
- :mod:`scalebook.checks` — answer checks the homework's test cells call
- :mod:`scalebook.widgets` — interactive explorers for the book (needs ipywidgets, matplotlib)

All quantities are SI (seconds, bytes, FLOPs/s) and FLOPs/s are dense.
"""

from .hardware import CATALOG, Chip, bytes_per_element, chip_names, get_chip

__all__ = ["CATALOG", "Chip", "bytes_per_element", "chip_names", "get_chip"]
__version__ = "0.1.0"
