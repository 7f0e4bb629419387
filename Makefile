# dpdesk: `make run` opens the app on the demo project, `make test` runs everything CI runs.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
export PIP_DISABLE_PIP_VERSION_CHECK := 1

.PHONY: all venv sysdeps lint test test-fast run bench clean

all: test

sysdeps:
	@bash tools/sysdeps.sh

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[all,test,package]'
	@touch $(STAMP)

venv: $(STAMP)

lint: venv
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

test: sysdeps venv lint
	$(BIN)/python -m pytest

test-fast: venv
	$(BIN)/python -m pytest -m "not slow and not calibration and not installers"

run: sysdeps venv
	$(BIN)/dpdesk --demo

bench: venv
	$(BIN)/python benchmarks/bench_engine.py

clean:
	rm -rf $(VENV) build dist *.egg-info .pytest_cache .mypy_cache

# Standalone installers (docs/install.md): the wheel, the PyInstaller bundle and the .deb into
# packaging/out/. package-test builds them and checks them as installed: the wheel in a fresh venv, and
# (as root on Debian/Ubuntu) the .deb installed, self-tested and removed (packaging/smoke_test.sh).
# CI (.ci/run) runs it after make test.
.PHONY: package package-test
package:
	bash packaging/build.sh all

package-test: sysdeps venv
	$(BIN)/python -m pytest -m installers tests/packaging/test_packaging.py
