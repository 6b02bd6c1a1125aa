"""The autograded copy of a submission: its cells with the run's output and each test's result.

Built anew from the release and the submission's cells as data, so that it always validates
with nbformat and shows nothing a browser could run (see :func:`autograded_notebook`). Nothing
here runs student code.
"""

from __future__ import annotations

import math
import re

from ..notebook import read_cells, tags_of, text
from ..safe_cells import RenderBudget, safe_attachments, safe_cell_text
from .check import RunReport
from .result import SubmissionResult
from .spec import Spec
from .submission import Validation, clean_text

_CELL_ID = re.compile(r"[a-zA-Z0-9_-]{1,64}")


def _stream(name: str, text: str) -> dict:
    return {"output_type": "stream", "name": name, "text": text}


def _error(ename: str, evalue: str, traceback: str = "") -> dict:
    return {"output_type": "error", "ename": ename, "evalue": evalue,
            "traceback": (traceback or f"{ename}: {evalue}").splitlines()}


def _copy_json(value):
    """A copy of JSON data (dicts, lists, strings, numbers): what ``copy.deepcopy`` gives, five
    times faster (no memo: JSON has no shared or cyclic parts). The instructor's metadata is
    copied into every submission's autograded notebook, so the spec's own is never shared."""
    if isinstance(value, dict):
        return {k: _copy_json(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy_json(v) for v in value]
    return value


def _tags(cell: dict) -> list[str] | None:
    """A student's cell's tags if every one is well-typed (nbformat's schema), cleaned."""
    tags = tags_of(cell)
    if isinstance(tags, list) and all(isinstance(t, str) and t and "," not in t for t in tags):
        return list(dict.fromkeys(clean_text(t)[:200] for t in tags[:50]))  # unique, as nbformat says
    return None


def autograded_notebook(spec: Spec, validation: Validation, result: SubmissionResult,
                        rep: RunReport | None) -> dict:
    """The submission with outputs: its cells' output from the sandbox, each test's result.

    Built anew, never copied from the submission wholesale, so that it always validates with
    nbformat: notebook metadata, and the metadata of every cell matched by grade_id, come from
    the release copy (the instructor's); test and read-only cells are the instructor's version;
    from the student it keeps only each cell's type, id, source, raster-image attachments, and
    for cells of their own well-typed ``tags``. A markdown or raw cell whose text could run code in
    a browser is shown as text (see :func:`safe_cell_text`); the submission itself is untouched.
    """
    release_cells, release = spec.release.get("cells", []), spec.release_cells
    release_by_gid = spec.release_by_gid
    notebook = validation.notebook if validation.invalid is None else None
    submitted = notebook is not None
    base_cells = notebook["cells"] if notebook is not None else release_cells
    base = (validation.cells or read_cells(notebook)) if notebook is not None else release
    by_pos = {i: gid for gid, i in validation.test_positions.items()}
    seen_tests: set[str] = set()
    seen_gids: set[str] = set()
    trusted = {c.source for c in release if c.cell_type in ("markdown", "raw")}
    budget = RenderBudget()
    cells = []
    for i, cell in enumerate(base_cells):
        gid = base[i].grade_id
        kind = cell.get("cell_type")
        if gid in result.max_scores and (i in by_pos or not submitted or gid in validation.tampered):
            if gid in seen_tests:
                continue
            seen_tests.add(gid)
            cells.append(_graded_test_cell(spec, result, gid))
            continue
        # the instructor's cell of this grade_id (first occurrence, same type): its nbgrader
        # metadata, and for read-only cells its source (what was run)
        rel: dict | None = None
        if gid is not None and gid not in seen_gids:
            rel = release_by_gid.get(gid)
            if rel is not None and (rel.get("cell_type") != kind or gid in result.max_scores):
                rel = None
            if rel is not None:
                seen_gids.add(gid)
        if rel is not None and isinstance(rel.get("metadata"), dict):
            meta = _copy_json(rel["metadata"])  # the instructor's, nbgrader's included
        else:
            meta = {}
            tags = _tags(cell)
            if tags:
                meta["tags"] = tags
        from_release = rel is not None and gid in spec.locked
        source = text((rel if rel is not None and from_release else cell).get("source"))
        raw = cell.get("attachments")
        attachments = safe_attachments(raw) if kind != "code" and _valid_attachments(raw) else {}
        if kind != "code" and not from_release and source not in trusted:
            source = safe_cell_text(kind, source, attachments, budget)
        new = {"cell_type": kind, "id": cell.get("id"), "metadata": meta, "source": source}
        if kind == "code":
            new["execution_count"] = None
            outputs = []
            ran = rep.cells.get(i) if rep is not None and submitted else None
            if ran:
                if ran["stdout"]:
                    outputs.append(_stream("stdout", ran["stdout"]))
                if ran["stderr"]:
                    outputs.append(_stream("stderr", ran["stderr"]))
                if ran["error"]:
                    e = ran["error"]
                    outputs.append(_error(e["ename"], e["evalue"], e["traceback"]))
            new["outputs"] = outputs
        elif attachments:
            new["attachments"] = attachments
        cells.append(new)
    for t in spec.tests:  # deleted test cells come back at the end, with their result
        if t.grade_id not in seen_tests:
            cells.append(_graded_test_cell(spec, result, t.grade_id))
    seen_ids: set[str] = set()
    for i, cell in enumerate(cells):
        cid = cell.get("id")
        if not isinstance(cid, str) or not _CELL_ID.fullmatch(cid) or cid in seen_ids:
            cid = f"cell-{i}"
            while cid in seen_ids:
                cid += "x"
        cell["id"] = cid
        seen_ids.add(cid)
    meta = spec.release.get("metadata")
    minor = spec.release.get("nbformat_minor")
    return {"cells": cells, "metadata": _copy_json(meta) if isinstance(meta, dict) else {},
            "nbformat": 4, "nbformat_minor": max(minor, 5) if type(minor) is int else 5}


def _graded_test_cell(spec: Spec, result: SubmissionResult, gid: str) -> dict:
    rel = spec.release_by_gid[gid]
    meta = _copy_json(rel.get("metadata"))
    return {"cell_type": "code", "id": rel.get("id"), "execution_count": None,
            "metadata": meta if isinstance(meta, dict) else {},
            "source": text(rel.get("source")), "outputs": _test_outputs(result, gid)}


_MIME = re.compile(r"[a-zA-Z0-9]+/[a-zA-Z0-9\-\+\.]+")


def _valid_attachments(value) -> bool:
    """nbformat's schema for attachments: {name: {mimetype: str | [str]}}."""
    return isinstance(value, dict) and len(value) <= 100 and all(
        isinstance(k, str) and isinstance(v, dict)
        and all(isinstance(m, str) and _MIME.fullmatch(m) and m != "application/json"
                and (isinstance(d, str) or (isinstance(d, list) and all(isinstance(x, str) for x in d)))
                for m, d in v.items())
        for k, v in value.items())


def _test_outputs(result: SubmissionResult, gid: str) -> list[dict]:
    pts, top = result.scores.get(gid, 0.0), result.max_scores.get(gid, 0.0)
    if pts >= top and top > 0:
        return [_stream("stdout", f"Passed: {_fmt(pts)}/{_fmt(top)} points\n")]
    msg = result.messages.get(gid, "") or "the check failed"
    return [_error("AssertionError", msg, f"AssertionError: {msg}\n(0/{_fmt(top)} points)")]


def _fmt(x: float) -> str:
    return f"{x:g}" if math.isfinite(x) else str(x)
