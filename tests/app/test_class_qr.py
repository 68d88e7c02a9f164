"""The student link's QR code: a PNG drawn locally whose modules are the link's QR matrix."""

from __future__ import annotations

import io

import pytest
import segno

from app.classroom.qr import QUIET_ZONE, qr_png

PIL = pytest.importorskip("PIL.Image")


def test_the_png_holds_the_links_qr_modules_at_the_scale_with_a_quiet_zone():
    link = "http://127.0.0.1:8501/?class=ACDEFG"
    image = PIL.open(io.BytesIO(qr_png(link, scale=3))).convert("L")
    matrix = segno.make(link, error="m").matrix  # rows of 1 (dark) / 0 (light)
    size = len(matrix) + 2 * QUIET_ZONE
    assert image.size == (3 * size, 3 * size)
    pixels = image.load()
    for row, modules in enumerate(matrix):
        for col, dark in enumerate(modules):
            x, y = 3 * (col + QUIET_ZONE) + 1, 3 * (row + QUIET_ZONE) + 1
            assert pixels[x, y] == (0 if dark else 255)
    assert all(pixels[i, 0] == 255 for i in range(3 * size))  # the quiet zone is white
    assert qr_png(link) != qr_png(link.replace("ACDEFG", "ACDEFH"))
