"""The second worked example is the acceptance test of "feed a job its own records":
``examples/orders`` (a project of its own: a Structured Streaming job that reads Avro orders
in Confluent's wire format with spark-avro's ``from_avro`` and keeps the latest of each in
Delta, rejecting what it cannot decode; a descriptor whose ``record(draw)`` writes those
orders with :class:`sealcheck.formats.AvroValues`; its pytest suite and a recorded sample of
its topic), installed from wheels into a fresh virtualenv and run as its user would, with
``pytest -n 2``:

* killed and paused: VALID;
* each of its two broken modes, which only its own data can show (an amount passed through a
  double; the order placed last winning over the record written last, nightly): INVALID,
  named at its batch and key (the example's own tests check the row against the topic);
* its recorded sample (``samples/orders.parquet``) replayed as the workload (nightly): VALID.

The virtualenv is the session's (:mod:`tests.integration.installed`).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.integration.installed import Installed, example_suite, run, user_env
from tests.product import ROOT, in_git_checkout

pytestmark = [
    pytest.mark.integration,
    pytest.mark.skipif(not in_git_checkout(), reason="needs a git checkout"),
]

EXAMPLE = ROOT / "examples" / "orders"


def test_the_orders_job_imports_nothing_of_sealcheck(installed: Installed) -> None:
    check = (
        "import sys, orders_job.job, orders_job.schema; "
        "print(sorted(m for m in sys.modules if m.split('.')[0].startswith('sealcheck')))"
    )
    out = run([str(installed.python), "-c", check], installed.bin, user_env(installed.bin))
    assert out.strip().splitlines()[-1] == "[]", out


#: the example's cases: the verdict pytest reports and the run's ``(broken, sampled)``
CASES = {
    "test_the_job_loses_nothing_when_killed_and_paused": ("VALID", (None, False), True),
    "test_an_amount_through_a_double_is_caught_at_its_batch_and_key": (
        "INVALID",
        ("amount-through-double", False),
        False,
    ),
    "test_the_order_placed_last_winning_is_caught_at_its_batch_and_key": (
        "INVALID",
        ("newest-by-event-time", False),
        False,
    ),
    "test_a_recorded_sample_of_the_topic_replays_as_the_workload": ("VALID", (None, True), True),
}


def _suite(installed: Installed, where: Path, names: list[str]) -> None:
    """The example's cases ``names`` under two workers: each told its verdict, each run's
    ``results.json`` saying it."""
    venv = installed.bin
    run([str(venv / "sealcheck"), "setup"], venv, user_env(venv))
    runs, _ = example_suite(venv, EXAMPLE, where, " or ".join(names), len(names))
    # what pytest's JUnit XML says of each case (xdist: each case carries its run's properties)
    cases = {
        c.get("name"): {p.get("name"): p.get("value") for p in c.iter("property")}
        for c in ET.parse(where / "chaos.xml").iter("testcase")
    }
    told = {name: props["sealcheck_verdict"] for name, props in cases.items()}
    assert told == {n: CASES[n][0] for n in names}, cases
    verdicts = {}
    for results in runs.glob("*/*/results.json"):
        test = json.loads((results.parent / "test.json").read_text())
        config = test["config"]
        sampled = bool(config["workload"]["sample_sha256"])
        verdicts[config["broken"], sampled] = json.loads(results.read_text())["valid"]
    assert verdicts == {CASES[n][1]: CASES[n][2] for n in names}


def test_the_orders_examples_suite_passes_under_two_workers(
    installed: Installed, tmp_path: Path
) -> None:
    """CI: the job killed and paused, and its amount through a double."""
    _suite(installed, tmp_path, list(CASES)[:2])


@pytest.mark.nightly  # two more runs of the example (~85 s here)
def test_the_orders_examples_other_cases_pass(installed: Installed, tmp_path: Path) -> None:
    """Nightly: the order placed last winning, and the recorded sample replayed."""
    _suite(installed, tmp_path, list(CASES)[2:])
