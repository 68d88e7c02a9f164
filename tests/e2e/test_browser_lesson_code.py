"""Lesson step 10's code fits its box at a projector's 1280 x 720, in normal and presenter mode:
no line runs past the right edge (long lines wrap), measured in the page (issue 50, item 10)."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.timeout(300)]

CODE = "[data-testid=stMain] [data-testid=stCode]"
CUT = """selector => [...document.querySelectorAll(selector)]
  .map(code => code.matches('pre') ? code : code.querySelector('pre'))
  .map(pre => ({ scroll: pre.scrollWidth, client: pre.clientWidth,
                 lines: pre.innerText.split('\\n').length }))"""


@pytest.mark.parametrize("present", [0, 1], ids=["normal", "presenter"])
def test_step_10s_code_is_not_cut_at_the_right(open_page, present) -> None:
    step = {"view": "Lesson", "source": "pretrained", "lesson": 10, "present": present}
    page, _problems = open_page({"viewport": {"width": 1280, "height": 720}}, 90_000, **step)
    page.locator(CODE).first.wait_for(state="attached")
    (code,) = page.evaluate(CUT, CODE)
    assert code["lines"] > 20 and code["scroll"] <= code["client"] + 1, code
