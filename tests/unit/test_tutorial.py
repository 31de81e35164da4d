"""docs/your-own-job.md shows the examples' descriptors whole, as they are in
examples/user_job and examples/orders (a new user copies them from the page)."""

from __future__ import annotations

import pytest

from tests.product import ROOT


@pytest.mark.parametrize(
    ("name", "lines"),
    [
        ("user_job/user_job_sealcheck.py", 53),  # "about 50 lines", as the page says
        ("user_job/user_job_sqlite_sealcheck.py", 56),
        ("orders/orders_sealcheck.py", 60),  # with its own records
    ],
)
def test_the_tutorial_shows_each_descriptor_whole_as_it_is(name: str, lines: int) -> None:
    page = (ROOT / "docs" / "your-own-job.md").read_text()
    intro = f"`examples/{name}`, the whole of it:\n\n```python\n"
    assert intro in page
    shown = page.split(intro, 1)[1].split("```\n", 1)[0]
    assert shown == (ROOT / "examples" / name).read_text()
    assert len(shown.splitlines()) <= lines


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


def test_the_cluster_section_quotes_the_example_as_it_is() -> None:
    """Section 12's code is the example's own, line for line (its descriptor and its job)."""
    import re

    page = (ROOT / "docs" / "your-own-job.md").read_text()
    section = page.split("## 12. Your job on a cluster", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, re.S)
    example = ROOT / "examples" / "user_job"
    sources = (example / "user_job_sealcheck.py").read_text() + (
        example / "user_job" / "job.py"
    ).read_text()
    assert len(blocks) == 2 and all(block in sources for block in blocks), blocks
