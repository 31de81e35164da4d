from pathlib import Path

import pytest

from sealcheck.infra import jars, paths


def test_pom_pins_spark_to_installed_pyspark() -> None:
    import pyspark

    assert jars.pom_property("spark.version") == pyspark.__version__
    assert jars.pom_property("kafka.version").startswith("4.")


def test_unknown_pom_property_names_it() -> None:
    with pytest.raises(KeyError, match=r"no\.such"):
        jars.pom_property("no.such")


def test_missing_jars_say_how_to_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SEALCHECK_CACHE", str(tmp_path))
    with pytest.raises(jars.JarsMissingError, match="sealcheck setup"):
        jars.kafka_classpath()
    with pytest.raises(jars.JarsMissingError, match="sealcheck setup"):
        jars.spark_connector_jars()


def test_the_cache_is_the_users_not_the_checkouts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("SEALCHECK_CACHE", raising=False)
    monkeypatch.delenv("XDG_CACHE_HOME", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert paths.cache_dir() == (tmp_path / "home" / ".cache" / "sealcheck").resolve()
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/is/ignored")
    assert paths.cache_dir() == (tmp_path / "home" / ".cache" / "sealcheck").resolve()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert paths.cache_dir() == (tmp_path / "xdg" / "sealcheck").resolve()
    monkeypatch.setenv("SEALCHECK_CACHE", str(tmp_path / "mine"))
    assert paths.cache_dir() == (tmp_path / "mine").resolve()
    assert jars.jars_dir() == (tmp_path / "mine" / "jars").resolve()


def test_the_poms_and_scripts_are_package_data() -> None:
    resources = Path(jars.__file__).resolve().parent / "resources"
    assert jars.POM.parent == resources / "jvm"
    assert jars.POM.name == "pom.xml"
    for module in ("kafka", "spark-kafka", "spark-delta", "spark-avro"):
        assert (paths.jvm_dir() / module / "pom.xml").is_file(), module
        assert f"<module>{module}</module>" in jars.POM.read_text()
    assert paths.scripts_dir() == resources / "scripts"
    for script in ("base-image.sh", "docker-engine.sh", "fuse.sh"):
        assert (paths.scripts_dir() / script).is_file(), script
