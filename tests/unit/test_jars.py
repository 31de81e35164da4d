from pathlib import Path

import pytest

from sealcheck.infra import jars


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
