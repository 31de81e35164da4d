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
    assert len(shown.splitlines()) <= 48  # "about 40 lines", as the page says


@pytest.mark.parametrize(
    ("heading", "names"),
    [
        ("**`DeltaOutput(", ("DeltaOutput",)),
        ("**`SQLiteOutput(", ("SQLiteOutput", "PostgresOutput")),
        ("**`TopicOutput(", ("TopicOutput",)),
    ],
)
def test_the_tutorial_lists_every_field_of_each_output(
    heading: str, names: tuple[str, ...]
) -> None:
    """Section 10's tables name exactly the fields a user can give each output."""
    import dataclasses

    import sealcheck

    page = (ROOT / "docs" / "your-own-job.md").read_text()
    section = page.split("## 10. The outputs, field by field", 1)[1]
    table = section.split(heading, 1)[1].split("\n\n| field |", 1)[1].split("\n\n", 1)[0]
    listed = {
        name.strip("` ") for row in table.splitlines()[2:] for name in row.split("|")[1].split("/")
    }
    given = {
        f.name
        for n in names
        for f in dataclasses.fields(getattr(sealcheck, n))
        if f.init and not f.name.startswith("_")
    }
    assert listed == given
