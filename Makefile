# Setup is automatic: the first target you run bootstraps uv into .tools/ and syncs .venv/ with
# what that target needs. Needs only python3 (3.11+), make and bash.
#
#   make demo        the offline trip-booking demo (syncs rac-core and its dependencies only)
#   make test        the whole suite: ruff, mypy, docs build, pytest (syncs every package and
#                    group; starts PostgreSQL for the store tests when it can, see scripts/test.sh)
#   make bench       the quick benchmark (scratch results); make bench-full regenerates the figures
#   make docs        builds the docs site into site/; make docs-serve serves it on 127.0.0.1:8000
UV := .tools/bin/uv
# The uv that wrote uv.lock: a newer one may rewrite the lock format or resolve differently.
UV_VERSION := 0.13.9
# Every package of the workspace and every dependency group (frameworks, benchmark, docs).
SYNC_STAMP := .venv/.rac-synced
# The core alone, for the demo; kept (not removed) when the full sync is there too.
CORE_STAMP := .venv/.rac-core-synced
DOCS_STAMP := .venv/.rac-docs-synced
LOCKED := $(UV) pyproject.toml uv.lock packages/*/pyproject.toml

.PHONY: demo test bench bench-full docs docs-serve clean

# uv goes into a venv of its own. Without pip in it (ensurepip takes seconds); the interpreter's
# pip installs into it, or, where python3 has no pip module, the venv's own.
$(UV):
	python3 -m venv --without-pip .tools
	python3 -m pip --python .tools/bin/python install --quiet --disable-pip-version-check "uv==$(UV_VERSION)" \
	  || { python3 -m venv .tools && .tools/bin/python -m pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"; }

$(SYNC_STAMP): $(LOCKED)
	$(UV) sync --all-packages --all-groups --frozen
	touch $(SYNC_STAMP)

# --inexact: a full environment keeps its frameworks when the demo runs in it.
$(CORE_STAMP): $(LOCKED)
	$(UV) sync --frozen --inexact --no-default-groups --package robust-agent-compensation
	touch $(CORE_STAMP)

$(DOCS_STAMP): $(LOCKED)
	$(UV) sync --frozen --inexact --no-default-groups --group docs
	touch $(DOCS_STAMP)

# --no-sync: `uv run` would otherwise sync the default (dev) group, every framework.
demo: $(CORE_STAMP)
	$(UV) run --frozen --no-sync rac demo

test: $(SYNC_STAMP)
	UV=$(UV) bash scripts/test.sh

bench: $(SYNC_STAMP)
	$(UV) run --frozen python -m benchmarks --quick

bench-full: $(SYNC_STAMP)
	$(UV) run --frozen python -m benchmarks --full

docs: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(UV) run --frozen --no-sync mkdocs build --strict --site-dir site
	@echo "docs built into site/ (open site/index.html, or make docs-serve)"

docs-serve: $(DOCS_STAMP)
	NO_MKDOCS_2_WARNING=1 $(UV) run --frozen --no-sync mkdocs serve --dev-addr 127.0.0.1:8000

clean:
	rm -rf .tools .venv site .rac
