"""docs/your-own-job.md shows the example's descriptor whole, as it is in
examples/user_job (a new user copies it from the page)."""

from __future__ import annotations

from tests.product import ROOT


def test_the_tutorial_shows_the_whole_descriptor_as_it_is() -> None:
    page = (ROOT / "docs" / "your-own-job.md").read_text()
    intro = "`examples/user_job/user_job_sealcheck.py`, the whole of it:\n\n```python\n"
    assert intro in page
    shown = page.split(intro, 1)[1].split("```\n", 1)[0]
    assert shown == (ROOT / "examples" / "user_job" / "user_job_sealcheck.py").read_text()
    assert len(shown.splitlines()) <= 40
