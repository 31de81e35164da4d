"""docs/your-own-job.md shows the example's descriptor whole, as it is in
examples/user_job (a new user copies it from the page)."""

from __future__ import annotations

import pytest

from tests.product import ROOT


@pytest.mark.parametrize("name", ["user_job_sealcheck.py", "user_job_sqlite_sealcheck.py"])
def test_the_tutorial_shows_each_descriptor_whole_as_it_is(name: str) -> None:
    page = (ROOT / "docs" / "your-own-job.md").read_text()
    intro = f"`examples/user_job/{name}`, the whole of it:\n\n```python\n"
    assert intro in page
    shown = page.split(intro, 1)[1].split("```\n", 1)[0]
    assert shown == (ROOT / "examples" / "user_job" / name).read_text()
    assert len(shown.splitlines()) <= 42  # "about 40 lines", as the page says
