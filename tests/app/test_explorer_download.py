"""The Attention view's "Download this explorer (HTML)": app.downloads.explorer_file holds the
run's payload, escapes the title and names the file safely."""

from __future__ import annotations

import base64
import re

import pytest
import torch

from app.downloads import explorer_file
from encoder.web.payload import full_weights, payload

TOKENS = ["[CLS]", "<b>it</b>", "[SEP]"]


def test_the_file_carries_the_payload_and_the_title_as_text() -> None:
    weights = torch.softmax(torch.randn(2, 2, 3, 3, generator=torch.Generator().manual_seed(0)), -1)
    data, name = explorer_file(payload(weights, TOKENS), "Layer 2 <script>alert(1)</script>")
    page = data.decode("utf-8")
    (encoded,) = re.findall(r'data-explorer-for="explorer"[^>]*>([^<]*)</script>', page)
    read = full_weights(base64.b64decode(encoded))
    assert max(float((torch.tensor(read[key]) - weights[key]).abs().max()) for key in read) < 1e-4
    assert "<script>alert(1)</script>" not in page and "&lt;script&gt;alert(1)" in page
    assert "<b>it</b>" not in page  # tokens travel inside the payload's bytes
    assert name == "attention-layer-2-script-alert-1-script.html"


@pytest.mark.parametrize(
    ("title", "name"),
    [
        ("", "attention-explorer.html"),
        ("שלום 🙂", "attention-explorer.html"),
        ("../../etc/passwd", "attention-etc-passwd.html"),
        ("x" * 100, f"attention-{'x' * 48}.html"),
    ],
)
def test_the_file_name_keeps_only_letters_digits_and_dashes(title, name) -> None:
    assert explorer_file(payload(torch.ones(1, 1, 1, 1), ["a"]), title)[1] == name
