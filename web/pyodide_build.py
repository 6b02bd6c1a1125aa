"""Runs inside Pyodide (web/pyodide_build.mjs): scalebook and a trimmed stdlib as .pyc zips.

    pyodide_build.py SCALEBOOK_SRC_ZIP OUT_DIR

1. Imports scalebook from its sources and renders every live widget once, so ``sys.modules``
   holds every module the widgets use (plus Pyodide's own start-up modules).
2. Writes ``OUT_DIR/stdlib.zip``: the modules of Pyodide's ``python_stdlib.zip`` that were
   imported, plus :data:`ALWAYS` (error paths a widget may hit later: tracebacks, warnings),
   compiled to .pyc. A sourceless .pyc stdlib is what makes start-up fast: most of the stock
   ~3 s start is CPython compiling .py files.
3. Writes ``OUT_DIR/scalebook.zip``: the scalebook sources, compiled the same way.
4. Writes ``OUT_DIR/modules.txt``: the stdlib modules kept, one a line (for review).

The zips are stored, not deflated: the build gzips each embedded file as a whole, which
compresses better, and imports then read without inflating.
"""

from __future__ import annotations

import importlib
import importlib._bootstrap_external as bootstrap
import json
import pkgutil
import sys
import zipfile
from pathlib import Path

#: Imported on error paths or lazily, so the smoke run may not reach them.
ALWAYS = (
    "traceback", "linecache", "tokenize", "token", "textwrap", "warnings", "codeop", "ast",
    "dis", "opcode", "_opcode_metadata", "inspect", "json", "json.decoder", "json.encoder",
    "json.scanner", "encodings.ascii", "encodings.latin_1", "encodings.utf_8",
    "encodings.aliases", "encodings.idna", "reprlib", "pprint", "statistics", "fractions",
    "decimal", "random", "bisect", "numbers", "contextlib", "dataclasses",
    "functools", "html", "html.entities", "string", "typing", "importlib.util",
    "importlib.machinery", "runpy", "pkgutil", "zipfile", "zipimport", "collections.abc",
)

#: A fixed timestamp, so the same inputs give byte-identical zips.
EPOCH = (2020, 1, 1, 0, 0, 0)


def compile_pyc(source: bytes, filename: str) -> bytes:
    """Unchecked-hash .pyc (PEP 552) of ``source``: no timestamp, never revalidated."""
    code = compile(source, filename, "exec", dont_inherit=True, optimize=0)
    return bytes(bootstrap._code_to_hash_pyc(code, b"\0" * 8, checked=False))


def write_pyc_zip(entries: dict[str, bytes], out: Path) -> None:
    """``{"pkg/mod.py": source}`` as a stored zip of ``pkg/mod.pyc``, in name order."""
    with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
        for name in sorted(entries):
            z.writestr(zipfile.ZipInfo(name[:-3] + ".pyc", EPOCH), compile_pyc(entries[name], name))


def stdlib_zip_path() -> Path:
    """Where Pyodide mounted its stdlib zip (``/lib/python313.zip``)."""
    return next(Path(p) for p in sys.path if p.endswith(".zip") and Path(p).is_file())


def smoke_run(src_dir: str) -> None:
    """Import scalebook from ``src_dir`` and render each live widget module once."""
    sys.path.insert(0, src_dir)
    live = importlib.import_module("scalebook.live")
    for info in pkgutil.iter_modules(live.__path__, "scalebook.live."):
        module = importlib.import_module(info.name)
        if callable(getattr(module, "view", None)):
            live.render_json(info.name, json.dumps({}))
    # the practice view draws and checks a problem of every chapter (scalebook.practice)
    practice = importlib.import_module("scalebook.practice")
    for problems in practice.CHAPTERS.values():
        for problem in problems[:1]:
            for changed in ("seed", "check"):
                live.render_json("scalebook.live.practice",
                                 json.dumps({"problem": problem.id, "seed": 1}), changed)
    for name in ALWAYS:
        importlib.import_module(name)


def main(src_zip: str, out_dir: str) -> None:
    out = Path(out_dir)
    with zipfile.ZipFile(src_zip) as z:
        z.extractall("/tmp/scalebook-src")
        sources = {n: z.read(n) for n in z.namelist() if n.endswith(".py")}
    smoke_run("/tmp/scalebook-src")
    stdlib = zipfile.ZipFile(stdlib_zip_path())
    names = set(stdlib.namelist())
    keep: dict[str, bytes] = {}
    kept_modules = []
    for module in sorted(sys.modules):
        path = module.replace(".", "/")
        for candidate in (path + ".py", path + "/__init__.py"):
            if candidate in names:
                keep[candidate] = stdlib.read(candidate)
                kept_modules.append(module)
    write_pyc_zip(keep, out / "stdlib.zip")
    write_pyc_zip(sources, out / "scalebook.zip")
    (out / "modules.txt").write_text("\n".join(kept_modules) + "\n")
    print(f"stdlib: kept {len(keep)} of {sum(n.endswith('.py') for n in names)} modules; "
          f"scalebook: {len(sources)} modules")


if __name__ == "__main__":
    main(*sys.argv[1:3])
