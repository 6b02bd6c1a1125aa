"""A figure for the book: a matplotlib drawing and the words that describe it to a reader who
cannot see it.

A :class:`Picture` is what every figure function in :mod:`scalebook.diagrams` returns. Its
``alt`` text is written from the same numbers that drew the figure (never by hand beside it), and
it travels inside the PNG itself as the standard ``Description`` text chunk, so the book build
can put it on the page's ``<img alt=...>`` without the chapter typing it twice.

In a chapter::

    pic = diagrams.collectives.ring_steps(...)
    glue("fig-ring-steps", pic, display=False)

and in the prose a numbered, captioned figure::

    ```{glue:figure} fig-ring-steps
    :name: fig-ring-steps

    The caption, one or two sentences on what to see.
    ```
"""

from __future__ import annotations

import io
from dataclasses import dataclass

from matplotlib.figure import Figure

__all__ = ["Picture", "PNG_DPI", "png_bytes", "png_description"]

PNG_DPI = 110
"""Resolution of the book's figure PNGs (dots per inch)."""


def png_bytes(figure: Figure, alt: str, dpi: int = PNG_DPI) -> bytes:
    """``figure`` as PNG bytes, with ``alt`` stored in the PNG's ``Description`` text chunk.

    The drawing is stored with a palette of at most 256 colours (a diagram's flat colours and
    their anti-aliased edges fit): about a third of the bytes of full RGBA, which keeps a
    chapter of a dozen figures under the page-weight budget (tests/test_page_weight.py)."""
    from PIL import Image, PngImagePlugin

    rendered = io.BytesIO()
    figure.savefig(rendered, format="png", dpi=dpi, bbox_inches="tight",
                   facecolor="white")
    rendered.seek(0)
    image = Image.open(rendered).convert("RGB").quantize(colors=256, dither=Image.Dither.NONE)
    info = PngImagePlugin.PngInfo()
    info.add_text("Description", alt)  # tEXt when Latin-1 can hold it, else iTXt
    buffer = io.BytesIO()
    image.save(buffer, format="png", optimize=True, pnginfo=info)
    return buffer.getvalue()


def png_description(data: bytes) -> str | None:
    """The ``Description`` text chunk of PNG ``data`` (as :func:`png_bytes` writes it), or None."""
    if not data.startswith(b"\x89PNG\r\n\x1a\n"):
        return None
    position = 8
    while position + 8 <= len(data):
        length = int.from_bytes(data[position:position + 4], "big")
        kind = data[position + 4:position + 8]
        body = data[position + 8:position + 8 + length]
        if kind == b"tEXt":
            key, _, value = body.partition(b"\x00")
            if key == b"Description":
                return value.decode("latin-1")
        elif kind == b"iTXt":
            key, _, rest = body.partition(b"\x00")
            if key == b"Description":
                # compression flag, method, language tag\0, translated keyword\0, text
                rest = rest[2:]
                _, _, rest = rest.partition(b"\x00")
                _, _, text = rest.partition(b"\x00")
                return text.decode("utf-8")
        position += 12 + length
    return None


@dataclass(frozen=True)
class Picture:
    """A drawn figure and its text alternative.

    Attributes:
        figure: the matplotlib figure.
        alt: what the figure shows, in words and with its numbers ("Bar chart: time per step on
            8 H100s: compute 26 ms, attention 19 ms, AllReduces 17 ms"), for a screen reader.
    """

    figure: Figure
    alt: str

    def __post_init__(self) -> None:
        if not self.alt.strip():
            raise ValueError("a Picture needs alt text that says what it shows")

    def _repr_png_(self) -> bytes:
        return png_bytes(self.figure, self.alt)

    def __repr__(self) -> str:
        return f"Picture(alt={self.alt!r})"
