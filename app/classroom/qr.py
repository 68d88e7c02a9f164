"""The student link as a QR code, drawn here with segno (pure Python; nothing leaves the
server)."""

from __future__ import annotations

import io

import segno

QUIET_ZONE = 4  # modules of white around the code, as the standard asks


def qr_png(link: str, scale: int = 8) -> bytes:
    """`link`'s QR code as PNG bytes, black on white with its quiet zone, `scale` pixels a
    module."""
    out = io.BytesIO()
    code = segno.make(link, error="m")
    code.save(out, kind="png", scale=scale, border=QUIET_ZONE, dark="#000", light="#fff")
    return out.getvalue()
