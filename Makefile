# Two commands for a fresh machine (see README.md):
#   make run    the main job: the default chaos run on local processes (prints verdict + report)
#   make test   every test suite: lint, unit, integration (local Kafka + Spark), containers
# Both install what they need: a virtualenv, the JVM jars from Maven Central (into the user's
# cache, ~/.cache/sealcheck unless $SEALCHECK_CACHE or $XDG_CACHE_HOME say otherwise), and (for
# the containers suite, as root) Debian's docker.io and the locally built images.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin

.PHONY: run test setup images clean tools

tools:
	@command -v java >/dev/null || { echo "Java 17 is required (Debian: openjdk-17-jdk-headless)"; exit 1; }
	@command -v mvn >/dev/null || { echo "Maven is required (Debian: maven)"; exit 1; }

$(BIN)/sealcheck: pyproject.toml | tools
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q -e '.[dev]'
	@touch $@

# the tests need only tox here: tox's `ci` environment installs the project and copies the jars
$(BIN)/tox: | tools
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	$(BIN)/pip install -q 'tox>=4.20'

setup: $(BIN)/sealcheck
	$(BIN)/sealcheck setup

images: setup
	$(BIN)/sealcheck setup --images

run: setup
	$(BIN)/sealcheck run

test: $(BIN)/tox
	$(BIN)/tox run -e ci

clean:
	rm -rf $(VENV) .tox
