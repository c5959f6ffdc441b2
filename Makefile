# Setup is automatic: the first target you run bootstraps uv into .tools/ and syncs .venv/.
# Needs only python3 (3.11+), make and bash.
UV := .tools/bin/uv
SYNC_STAMP := .venv/.rac-synced

.PHONY: demo test bench bench-full docs clean

$(UV):
	python3 -m venv .tools
	.tools/bin/python -m pip install --quiet --disable-pip-version-check uv

$(SYNC_STAMP): $(UV) pyproject.toml uv.lock packages/*/pyproject.toml
	$(UV) sync --all-packages --all-groups --frozen
	touch $(SYNC_STAMP)

demo: $(SYNC_STAMP)
	$(UV) run --frozen rac demo

test: $(SYNC_STAMP)
	UV=$(UV) bash scripts/test.sh

bench: $(SYNC_STAMP)
	$(UV) run --frozen python -m benchmarks --quick

bench-full: $(SYNC_STAMP)
	$(UV) run --frozen python -m benchmarks --full

docs: $(SYNC_STAMP)
	$(UV) run --frozen mkdocs serve

clean:
	rm -rf .tools .venv site .rac
