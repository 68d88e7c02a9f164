"""Colours that carry meaning work for the common colour-vision deficiencies: each is simulated
(Machado, Oliveira and Fernandes 2009, full severity, in linear RGB) and compared in CIELAB. The
series colours (Python's and the browser's, one list) stay apart in every vision and reach 3:1
on white; the diverging scale's two sides stay apart and its white middle stays lightest; the
sequential scale (viridis) still runs from dark to light."""

from __future__ import annotations

import itertools
import re

import numpy as np
import pytest

from app.charts.common import DIVERGING_SCALE, SERIES_COLOURS, VIRIDIS
from encoder.web import asset

MACHADO = {
    "normal": np.eye(3),
    "protanopia": np.array([
        [0.152286, 1.052583, -0.204868],
        [0.114503, 0.786281, 0.099216],
        [-0.003882, -0.048116, 1.051998],
    ]),
    "deuteranopia": np.array([
        [0.367322, 0.860646, -0.227968],
        [0.280085, 0.672501, 0.047413],
        [-0.011820, 0.042940, 0.968881],
    ]),
    "tritanopia": np.array([
        [1.255528, -0.076749, -0.178779],
        [-0.078411, 0.930809, 0.145753],
        [0.004733, 0.691367, 0.303900],
    ]),
}  # fmt: skip
APART = 10.0  # CIE76 ΔE: two line or point colours this far apart are told apart at a glance
SRGB_TO_XYZ = np.array(
    [[0.4124, 0.3576, 0.1805], [0.2126, 0.7152, 0.0722], [0.0193, 0.1192, 0.9505]]
)
WHITE = np.array([0.95047, 1.0, 1.08883])


def rgb_of(colour: str) -> np.ndarray:
    """'#0072B2' or 'rgb(5,48,97)' as [r, g, b] in 0..1."""
    if colour.startswith("#"):
        return np.array([int(colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255
    return np.array([float(v) for v in re.findall(r"[\d.]+", colour)[:3]]) / 255


def linear(rgb: np.ndarray) -> np.ndarray:
    return np.where(rgb <= 0.04045, rgb / 12.92, ((rgb + 0.055) / 1.055) ** 2.4)


def seen(colour: str, vision: str) -> np.ndarray:
    """The colour as a person with `vision` sees it, in CIELAB."""
    xyz = SRGB_TO_XYZ @ np.clip(MACHADO[vision] @ linear(rgb_of(colour)), 0, 1) / WHITE
    f = np.where(xyz > 0.008856, np.cbrt(xyz), 7.787 * xyz + 16 / 116)
    return np.array([116 * f[1] - 16, 500 * (f[0] - f[1]), 200 * (f[1] - f[2])])


def contrast_on_white(colour: str) -> float:
    luminance = float(np.array([0.2126, 0.7152, 0.0722]) @ linear(rgb_of(colour)))
    return 1.05 / (luminance + 0.05)


def test_the_browser_and_the_charts_share_one_series_list() -> None:
    found = re.search(r"const SERIES_COLOURS = \[([^\]]*)\]", asset("shared.js"))
    assert re.findall(r'"(#[0-9A-Fa-f]{6})"', found.group(1)) == SERIES_COLOURS


@pytest.mark.parametrize("vision", sorted(MACHADO))
def test_series_colours_stay_apart_in_every_vision(vision) -> None:
    closest = min(
        (float(np.linalg.norm(seen(a, vision) - seen(b, vision))), a, b)
        for a, b in itertools.combinations(SERIES_COLOURS, 2)
    )
    assert closest[0] >= APART, closest


def test_series_colours_are_marks_that_read_on_white() -> None:
    assert min(contrast_on_white(colour) for colour in SERIES_COLOURS) >= 3.0


@pytest.mark.parametrize("vision", sorted(MACHADO))
def test_the_diverging_scale_keeps_its_sides_apart_and_its_middle_light(vision) -> None:
    colours = [colour for _, colour in DIVERGING_SCALE]
    low, middle = seen(colours[0], vision), seen(colours[len(colours) // 2], vision)
    high = seen(colours[-1], vision)
    assert np.linalg.norm(low - high) >= 2 * APART  # B less and B more never look alike
    assert middle[0] > max(low[0], high[0]) + 30  # zero: the lightest, whoever looks


@pytest.mark.parametrize("vision", sorted(MACHADO))
def test_viridis_still_runs_dark_to_light(vision) -> None:
    lightness = [seen(colour, vision)[0] for _, colour in VIRIDIS]
    assert all(b > a for a, b in itertools.pairwise(lightness))
