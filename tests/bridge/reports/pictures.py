"""Screenshots of the pages, checked by their pixels, and kept for the README and docs/ when
`EVALRELAY_SCREENSHOT_DIR` names a folder (`docs/images`)."""

from __future__ import annotations

import os
import shutil
from collections import Counter
from pathlib import Path

from PIL import Image

from tests.browser import screenshot

PASSED_GREEN = (0x1A, 0x7F, 0x37)
FAILED_RED = (0xCF, 0x22, 0x2E)
"""`--ok` and `--fail` of the pages' style sheet."""
INTERVAL_BLUE = (0x0A, 0x30, 0x69)
"""The error bars of the charts (`rect.ci`)."""


def colours(
    png: Path, box: tuple[int, int, int, int] | None = None
) -> Counter[tuple[int, int, int]]:
    """Counts of the colours of `png`, or of its `box` (left, top, right, bottom)."""
    with Image.open(png) as image:
        rgb = image.convert("RGB") if box is None else image.crop(box).convert("RGB")
        return Counter(rgb.getpixel((x, y)) for x in range(rgb.width) for y in range(rgb.height))  # type: ignore[misc]


def picture(
    address: str, name: str, tmp_path: Path, size: tuple[int, int]
) -> Counter[tuple[int, int, int]]:
    """The page's screenshot as counts of its colours; kept as `name`.png for the README
    when asked."""
    png = screenshot(address, tmp_path / f"{name}.png", tmp_path / "chromium-profile", size)
    keep(png, name)
    return colours(png)


def keep(png: Path, name: str) -> None:
    """A copy as `name`.png in `EVALRELAY_SCREENSHOT_DIR`, when it is set."""
    folder = os.environ.get("EVALRELAY_SCREENSHOT_DIR")
    if folder:
        Path(folder).mkdir(parents=True, exist_ok=True)
        shutil.copy(png, Path(folder) / f"{name}.png")
