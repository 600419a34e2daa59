# dynalocal: `make run` serves on 127.0.0.1:$(PORT); `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
HOST ?= 127.0.0.1

.PHONY: install browser run lint test test-ranges bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The stamp makes `install` idempotent: it reruns only when pyproject.toml changes.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

install: $(VENV)/.installed

run: install
	$(BIN)/dynalocal --host $(HOST) --port $(PORT)

# The console's browser test needs Chromium (Debian's package); install it when missing and we may.
# If it cannot be installed the test skips with the package to install, except under CI (CI=true), where it fails.
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { [ "$$(id -u)" = 0 ] && \
		command -v apt-get >/dev/null && (apt-get update -qq && \
		apt-get install -y -qq -o DPkg::Lock::Timeout=600 chromium >/dev/null); } || true

# Style and bug-prone patterns (ruff) and types (mypy) of the package; settings in pyproject.toml.
lint: install
	$(BIN)/ruff check dynalocal
	$(BIN)/mypy dynalocal

test: install lint browser
	$(BIN)/python -m pytest

# The suite at both ends of every supported dependency range (constraints/lowest.txt and
# newest.txt), each in its own virtualenv (.venv-lowest, .venv-newest); `make test` uses whatever
# pip resolves today. Stops at the first end that fails.
RANGES ?= lowest newest
test-ranges:
	@for end in $(RANGES); do \
		echo "== $$end: $$(grep -v '^#' constraints/$$end.txt | tr '\n' ' ')"; \
		[ -x .venv-$$end/bin/python ] || $(PYTHON) -m venv .venv-$$end || exit 1; \
		.venv-$$end/bin/python -m pip install --quiet --upgrade pip && \
		.venv-$$end/bin/python -m pip install --quiet -c constraints/$$end.txt -e '.[test]' && \
		.venv-$$end/bin/python -m pip check && \
		.venv-$$end/bin/python -m pytest -p no:cacheprovider || exit 1; \
	done

# The load generator is wrk (Debian's package); install it when missing and we may.
bench: install
	@command -v wrk >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		(apt-get update -qq && apt-get install -y -qq wrk >/dev/null); } || true
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) .venv-lowest .venv-newest build *.egg-info .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
