"""A dependency-free line chart written as PNG (zlib + struct), for the soak report.

matplotlib is not a test dependency; the soak only needs to show whether two curves stay flat, so
this draws each series in its own panel, scaled to [0, max], with the panel's min/max printed in a
tiny digit font.
"""

from __future__ import annotations

import itertools
import struct
import zlib
from pathlib import Path

import numpy as np

_GLYPHS = {
    "0": "111101101101111", "1": "010110010010111", "2": "111001111100111", "3": "111001111001111",
    "4": "101101111001001", "5": "111100111001111", "6": "111100111101111", "7": "111001001001001",
    "8": "111101111101111", "9": "111101111001111", ".": "000000000000010", " ": "000000000000000",
    "-": "000000111000000",
}
"""3x5 glyphs, row-major."""


def _text(img: np.ndarray, x: int, y: int, text: str, color: tuple[int, int, int], scale: int = 2) -> None:
    for ch in text:
        bits = _GLYPHS.get(ch, _GLYPHS[" "])
        for i, b in enumerate(bits):
            if b == "1":
                r, c = divmod(i, 3)
                img[y + r * scale : y + (r + 1) * scale, x + c * scale : x + (c + 1) * scale] = color
        x += 4 * scale


def _line(img: np.ndarray, x0: int, y0: int, x1: int, y1: int, color: tuple[int, int, int]) -> None:
    n = max(abs(x1 - x0), abs(y1 - y0), 1)
    xs = np.rint(np.linspace(x0, x1, n + 1)).astype(int)
    ys = np.rint(np.linspace(y0, y1, n + 1)).astype(int)
    for dy in (0, 1):
        img[np.clip(ys + dy, 0, img.shape[0] - 1), xs] = color


def write_chart(path: Path, series: list[tuple[list[float], list[float], tuple[int, int, int]]]) -> Path:
    """One panel per (xs, ys, color); y from 0 to 1.2 x max so that a flat curve looks flat."""
    width, panel_h, margin = 800, 240, 40
    img = np.full((panel_h * len(series), width, 3), 255, dtype=np.uint8)
    for k, (xs, ys, color) in enumerate(series):
        top = k * panel_h
        x_lo, x_hi = margin, width - 10
        y_lo, y_hi = top + panel_h - margin // 2, top + 10
        img[y_hi:y_lo, x_lo] = (0, 0, 0)
        img[y_lo, x_lo:x_hi] = (0, 0, 0)
        if not ys:
            continue
        ymax = max(ys) * 1.2 or 1.0
        xmax = max(xs) or 1.0
        pts = [
            (int(x_lo + (x / xmax) * (x_hi - x_lo)), int(y_lo - (y / ymax) * (y_lo - y_hi)))
            for x, y in zip(xs, ys, strict=True)
        ]
        for (a, b), (c, d) in itertools.pairwise(pts):
            _line(img, a, b, c, d, color)
        for a, b in pts:
            img[max(b - 2, 0) : b + 3, max(a - 2, 0) : a + 3] = color
        _text(img, x_lo + 8, y_hi, f"{min(ys):.4g} - {max(ys):.4g}", color)
        _text(img, x_hi - 60, y_lo + 4, f"{xmax:.0f}", (0, 0, 0))
    raw = b"".join(b"\x00" + img[r].tobytes() for r in range(img.shape[0]))

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", width, img.shape[0], 8, 2, 0, 0, 0)
    body = chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 6)) + chunk(b"IEND", b"")
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + body)
    return path
