"""Images for a model that can see: decoded within bounds, downscaled, re-encoded, priced, and
held back when what would go with them looks secret.

What leaves the machine is a new picture, never the file: the first frame, turned upright by its
EXIF orientation, fitted within MAX_SIDE pixels a side and encoded afresh as PNG (drawings,
screenshots, anything transparent) or JPEG (photos). Re-encoding drops every piece of metadata
(EXIF, XMP, ICC, text chunks), so a photo's location or a comment in a PNG never goes with it.

Pillow is imported when the first image is prepared: a server whose model cannot see never loads
it, and one without Pillow installed keeps images' structural annotations.
"""

from __future__ import annotations

import base64
import io
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from filescout.core.records import DocumentFacts
from filescout.llm.redact import redact

if TYPE_CHECKING:
    from PIL import Image

MAX_SIDE = 512
"""The longest side sent. One 512-pixel tile is what OpenAI's low detail looks at anyway (it
scales the image to 512 × 512), and what most local vision models resize to or below."""
MAX_PIXELS = 25_000_000
"""The most pixels decoded (after a JPEG's own cheap reduction, see `_decode`): a 24-megapixel
camera's photo, about 100 MB as RGBA for the moment it is scaled. Beyond it, or a file whose header
claims more (a decompression bomb), the image keeps its structural annotation."""
PNG_LIMIT = 96 * 1024
"""A picture without transparency whose PNG comes out larger than this is sent as JPEG (a
photo saved as PNG): the request stays small and the model sees no difference."""
JPEG_QUALITY = 85
RASTER_FORMATS = {
    "png": "PNG",
    "jpeg": "JPEG",
    "gif": "GIF",
    "webp": "WEBP",
    "bmp": "BMP",
    "tiff": "TIFF",
    "ico": "ICO",
}
"""The formats (a file's language) sent as pictures, and the Pillow decoders tried on them: only
these, so a file named `.png` can never reach a decoder such as EPS's, which runs Ghostscript. A
file in one of them under another's name (a JPEG saved as `.png`) still decodes. SVG is not
rasterised: its text goes to the model as a text file's does."""
DECODERS = tuple(dict.fromkeys(RASTER_FORMATS.values()))


class ImageRefused(ValueError):
    """The image cannot be sent: it does not decode, is too large to decode, or Pillow is missing."""


@dataclass(frozen=True, slots=True)
class Picture:
    """What is sent for an image: its re-encoded, downscaled copy."""

    media_type: str
    """image/png or image/jpeg"""
    data: bytes
    width: int
    height: int
    source_width: int
    source_height: int
    """The file's own dimensions (its first frame's)."""

    @property
    def data_url(self) -> str:
        return f"data:{self.media_type};base64,{base64.b64encode(self.data).decode('ascii')}"


def pillow_missing() -> str | None:
    """Why no picture can be made here (Pillow is not installed), or None: found without
    importing it."""
    import importlib.util

    if importlib.util.find_spec("PIL") is None:
        return "model.images is on but Pillow is not installed (pip install 'filescout[images]')"
    return None


def sent_size(width: int, height: int, max_side: int = MAX_SIDE) -> tuple[int, int]:
    """The dimensions an image of `width` x `height` is sent at: fitted within `max_side` a side,
    its aspect kept, never enlarged, never below one pixel."""
    if width <= max_side and height <= max_side:
        return max(width, 1), max(height, 1)
    scale = max_side / max(width, height)
    return max(1, round(width * scale)), max(1, round(height * scale))


def image_tokens(width: int, height: int, per_image: int, max_side: int = MAX_SIDE) -> int:
    """The input tokens one image of `width` x `height` costs as sent: `per_image` (the setting
    `model.imageTokens`) for each 512-pixel tile of the sent copy. The copy fits within one tile,
    so this is `per_image` for every image: OpenAI counts 85 tokens for one at low detail, and
    85 + 170 per tile at high detail (255 for one tile)."""
    sent_width, sent_height = sent_size(width, height, max_side)
    tiles = math.ceil(sent_width / 512) * math.ceil(sent_height / 512)
    return per_image * tiles


def looks_secret(path: str, facts: DocumentFacts | None) -> bool:
    """Whether anything that would go with the image (its path, or a fact it states of itself:
    title, author, camera, dates, ...) looks like a secret: then the image is not sent at all,
    since its pixels may show what its name gives away, and pixels cannot be redacted."""
    said = [path]
    if facts is not None:
        said += [facts.title, facts.author, facts.created, facts.modified, facts.camera, facts.taken]
        said += facts.headings
    return any(text and redact(text) != text for text in said)


def downscale(data: bytes, *, max_side: int = MAX_SIDE, max_pixels: int = MAX_PIXELS) -> Picture:
    """The picture sent for the image file `data`. Raises ImageRefused when it cannot be decoded
    within the bounds (or Pillow is not installed)."""
    try:
        from PIL import Image
    except ImportError:
        raise ImageRefused("Pillow is not installed") from None
    try:
        with Image.open(io.BytesIO(data), formats=DECODERS) as image:
            source = image.size
            frame = _decode(image, max_side, max_pixels)
        frame.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
        return _encode(frame, source)
    except ImageRefused:
        raise
    except (Image.DecompressionBombError, MemoryError) as exc:
        raise ImageRefused(f"too large to decode: {exc}") from None
    except Exception as exc:  # Pillow raises many kinds (OSError, SyntaxError, ValueError, ...)
        raise ImageRefused(f"cannot be decoded: {type(exc).__name__}: {exc}") from None


def _decode(image: Image.Image, max_side: int, max_pixels: int) -> Image.Image:
    """The first frame, decoded, upright, in a mode PNG or JPEG can hold. A JPEG is decoded at
    the smallest of its built-in reductions (1/2, 1/4, 1/8) still at least `max_side` a side,
    which costs a fraction of the full decode."""
    from PIL import ImageOps

    if image.format == "JPEG":
        image.draft("RGB", (max_side, max_side))
    width, height = image.size
    if width * height > max_pixels:
        raise ImageRefused(f"too large to decode: {width} × {height} pixels (at most {max_pixels})")
    image.load()
    transparent = image.mode in ("RGBA", "LA", "PA") or "transparency" in image.info
    try:
        upright = ImageOps.exif_transpose(image)  # a copy
    except Exception:  # a broken orientation tag: sent as stored
        upright = image.copy()
    if upright.mode in ("RGBA", "LA") or (upright.mode in ("RGB", "L") and not transparent):
        return upright
    return upright.convert("RGBA" if transparent else "RGB")


def _encode(frame: Image.Image, source: tuple[int, int]) -> Picture:
    transparent = frame.mode in ("RGBA", "LA")
    out = io.BytesIO()
    frame.save(out, format="PNG", optimize=False)
    media_type = "image/png"
    if not transparent and out.tell() > PNG_LIMIT:
        jpeg = io.BytesIO()
        frame.save(jpeg, format="JPEG", quality=JPEG_QUALITY)
        if jpeg.tell() < out.tell():
            out, media_type = jpeg, "image/jpeg"
    return Picture(
        media_type=media_type,
        data=out.getvalue(),
        width=frame.width,
        height=frame.height,
        source_width=source[0],
        source_height=source[1],
    )
