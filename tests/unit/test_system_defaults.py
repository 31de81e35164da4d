"""A system under test's own run defaults, and what it refuses, at config time."""

from __future__ import annotations

import pytest

from sealcheck.harness.run.config import ConfigError, load_config
from sealcheck.harness.run.flags import to_flags
from sealcheck.harness.run.test import load_test


def test_the_delta_job_brings_its_own_defaults_and_flags_still_win() -> None:
    cfg = load_config(None, {"system": "delta-streaming"})
    assert (cfg.nemesis_interval_s, cfg.duration_s, cfg.max_records_per_step) == (
        45.0,
        180.0,
        20_000,
    )
    assert "lost-writes" not in cfg.nemeses  # its store is not on a lazy disk
    mine = load_config(None, {"system": "delta-streaming", "nemesis_interval_s": 7.0})
    assert mine.nemesis_interval_s == 7.0 and mine.duration_s == 180.0
    # the reproduce line spells every setting, so a replay does not depend on the defaults
    assert "--interval" in to_flags(cfg) or any("nemesis_interval_s" in f for f in to_flags(cfg))


def test_the_pipeline_keeps_the_harness_defaults() -> None:
    cfg = load_config(None, {})
    assert (cfg.system, cfg.nemesis_interval_s, cfg.max_records_per_step) == (
        "upsert-source",
        3.0,
        2_000,
    )


def test_the_delta_job_runs_on_containers_with_its_own_defaults() -> None:
    cfg = load_config(None, {"system": "delta-streaming", "backend": "containers"})
    assert (cfg.brokers, cfg.nemesis_interval_s) == (3, 45.0)
    assert "lost-writes" not in cfg.nemeses  # a local-only fault is left out of the mix


def test_a_fault_the_backend_cannot_host_is_refused_in_one_line() -> None:
    raw = {"backend": "containers", "nemeses": ["lost-writes-kafka"]}
    with pytest.raises(ConfigError, match="lost-writes-kafka") as err:
        load_test(None, raw)
    assert "\n" not in str(err.value) and "--backend local" in str(err.value)


def test_a_variant_of_the_delta_job_is_a_broken_mode() -> None:
    cfg = load_config(None, {"system": "delta-streaming", "broken": "drop-duplicates"})
    assert cfg.broken == "drop-duplicates"
    with pytest.raises(ConfigError, match="reappend-after-restart"):
        load_test(None, {"system": "upsert-source", "broken": "drop-duplicates"})


def test_the_old_name_of_the_upsert_source_still_loads() -> None:
    """Configs and stored test.json files of before the rename spell the system ``pipeline``."""
    from sealcheck.harness.run.config import build_config
    from sealcheck.systems.registry import system

    assert build_config({"system": "pipeline"}).system == "upsert-source"
    assert load_config(None, {"system": "pipeline"}).system == "upsert-source"
    assert system("pipeline").name == "upsert-source"


def test_a_jobs_default_mix_leaves_power_cuts_to_named_nemeses():
    job = "tests.unit.test_system_registry:FileJob"  # a Job of the tests, not installed
    cfg = load_config(None, {"system": job})
    assert "lost-writes" not in cfg.nemeses and "crash-at-sync" not in cfg.nemeses
    assert cfg.nemeses == ("kill", "pause")  # it declares no windows: no boundaries
    named = load_config(None, {"system": job, "nemeses": ["lost-writes"]})
    assert named.nemeses == ("lost-writes",)


def test_a_jobs_default_mix_crashes_it_at_its_commit_boundaries_where_fuse_is(monkeypatch):
    from sealcheck.infra import lazy_disk

    job = "tests.unit.test_system_registry:WindowedJob"
    monkeypatch.setattr(lazy_disk, "fuse_missing", lambda: "")
    cfg = load_config(None, {"system": job})
    assert cfg.nemeses.count("boundary") == 4 and "lost-writes" not in cfg.nemeses
    monkeypatch.setattr(lazy_disk, "fuse_missing", lambda: "no /dev/fuse on this machine")
    assert "boundary" not in load_config(None, {"system": job}).nemeses  # the mix goes on


def test_a_jobs_default_run_aims_at_each_of_its_four_boundaries_in_every_seed() -> None:
    """Six windows in 140 s, shuffled: four go to ``boundary``, whose seeded cover takes the
    four edges where a job's own mistakes show, so each variant meets its boundary."""
    from sealcheck.core.roles import SUT, Role
    from sealcheck.core.windows import boundaries, streaming_windows
    from sealcheck.nemeses.api import PlanInfo
    from sealcheck.nemeses.schedule import plan_schedule
    from sealcheck.systems.job import Job

    defaults = Job.run_defaults
    names = [n for n in defaults["nemeses"] if n != "failpoint"]  # a job without failpoints
    found = tuple(boundaries(streaming_windows("checkpoint")))
    info = PlanInfo(roles={SUT.name: Role(SUT.name)}, boundaries=found)
    four = {f"after-offsets:{e}" for e in ("closing", "closed", "committed", "full")}
    for seed in range(1, 31):
        plan = plan_schedule(names, seed, defaults["duration_s"],
                             defaults["nemesis_interval_s"], info)  # fmt: skip
        aimed = {a.value["boundary"] for a in plan if a.nemesis == "boundary"}
        assert aimed == four, seed
        assert {a.nemesis for a in plan} == {"boundary", "kill", "pause"}, seed
