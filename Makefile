# dynalocal: `make run` serves on 127.0.0.1:$(PORT); `make test` runs the whole suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
HOST ?= 127.0.0.1

.PHONY: install browser run test bench clean

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
# If it cannot be installed the test fails (it does not skip).
browser:
	@command -v chromium >/dev/null || command -v chromium-browser >/dev/null || { [ "$$(id -u)" = 0 ] && \
		command -v apt-get >/dev/null && (apt-get update -qq && \
		apt-get install -y -qq -o DPkg::Lock::Timeout=600 chromium >/dev/null); } || true

test: install browser
	$(BIN)/python -m pytest

# The load generator is wrk (Debian's package); install it when missing and we may.
bench: install
	@command -v wrk >/dev/null || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && \
		(apt-get update -qq && apt-get install -y -qq wrk >/dev/null); } || true
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
	find . -name __pycache__ -type d -prune -exec rm -rf {} +
