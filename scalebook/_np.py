"""``np`` for scalebook's solver modules: the real NumPy, or a scalar-only stand-in without it.

The live book runs scalebook in the reader's browser (Pyodide) with no NumPy in the bundle, and
its widgets only ever pass single numbers. So the solver modules the widgets import (validation,
roofline, transformer, collectives, networks, parallelism, training, scaling_laws) write
``from scalebook._np import np`` instead of ``import numpy as np``:

- NumPy installed (CPython, notebooks, tests): ``np`` *is* ``numpy``; nothing changes;
- NumPy not found (Pyodide): ``np`` is :mod:`scalebook._scalar_np`, which answers the scalar
  calls those modules make with NumPy's semantics and refuses array input loudly.

Only a missing NumPy selects the stand-in; a NumPy that is installed but fails to import
raises as usual. Modules that need real arrays or JAX (tinytransformer, decoding, hlo, checks)
keep ``import numpy`` and are never imported in the browser; ``import scalebook`` itself loads
only :mod:`scalebook.hardware`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    # The type checker checks the solver modules against the real NumPy; the stand-in answers
    # the same scalar calls with the same semantics (tests/test_numpy_free.py runs them on it).
    import numpy as np
else:
    try:
        import numpy as np
    except ModuleNotFoundError as error:
        if error.name != "numpy":
            raise
        from scalebook import _scalar_np as np

#: True when ``np`` is the real NumPy, False under the scalar stand-in.
HAVE_NUMPY: bool = np.__name__ == "numpy"

__all__ = ["HAVE_NUMPY", "np"]
