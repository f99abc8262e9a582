"""What a downloaded image is: its format and size, read with Pillow, decoding bounded.

The header gives the size before any pixel is decoded: an image with more than ``max_pixels``
pixels is refused there (a small file can inflate to gigabytes: a decompression bomb). Then the
whole image is decoded, so a truncated or corrupt file is found out, not stored.

>>> import io
>>> from PIL import Image
>>> png = io.BytesIO()
>>> Image.new("RGB", (3, 2)).save(png, "PNG")
>>> measure_image(png.getvalue(), max_pixels=100)
ImageInfo(image_format='PNG', width=3, height=2)
>>> measure_image(png.getvalue(), max_pixels=5)
Traceback (most recent call last):
...
harvestman.errors.ImageRejected: too_many_pixels: 3x2 is more than 5 pixels
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from harvestman.errors import ImageRejected

__all__ = ["IMAGE_FORMATS", "ImageInfo", "is_image_type", "measure_image"]

# What a product image may be; anything else Pillow reads (TIFF, BMP, ...) is refused.
IMAGE_FORMATS = ("PNG", "JPEG", "WEBP", "GIF")


@dataclass(slots=True, frozen=True)
class ImageInfo:
    image_format: str  # one of IMAGE_FORMATS
    width: int
    height: int


def is_image_type(content_type: str) -> bool:
    """Whether a response's media type is an image (``image/*``).

    >>> is_image_type("image/png"), is_image_type("IMAGE/webp"), is_image_type("text/html")
    (True, True, False)
    """
    return content_type.partition(";")[0].strip().lower().startswith("image/")


def measure_image(body: bytes, *, max_pixels: int) -> ImageInfo:
    """The format and size of an image, decoded in full. Raises ``ImageRejected`` with reason
    ``undecodable`` (not an image of IMAGE_FORMATS, truncated, corrupt) or ``too_many_pixels``."""
    from PIL import Image, UnidentifiedImageError

    try:
        with warnings.catch_warnings():
            # Pillow warns (then raises) past its own MAX_IMAGE_PIXELS: ours is checked below.
            warnings.simplefilter("error", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(body), formats=IMAGE_FORMATS) as image:
                width, height = image.size
                if width * height > max_pixels:
                    raise ImageRejected(
                        "too_many_pixels", f"{width}x{height} is more than {max_pixels} pixels"
                    )
                image_format = str(image.format)
                image.load()
    except ImageRejected:
        raise
    except (Image.DecompressionBombWarning, Image.DecompressionBombError) as exc:
        raise ImageRejected("too_many_pixels", str(exc)) from None
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, EOFError) as exc:
        raise ImageRejected("undecodable", str(exc)[:200]) from None
    return ImageInfo(image_format, width, height)
