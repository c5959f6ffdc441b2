#!/usr/bin/env bash
# The whole test suite: lint, types, docs, tests. Any failure (pytest's "no tests ran" too) fails it.
set -euo pipefail
cd "$(dirname "$0")/.."
UV="${UV:-uv}"
run() { echo "+ $*"; "$UV" run --frozen "$@"; }

run ruff check .
run mypy --strict packages/rac-core/src
run mypy packages/rac-langgraph/src packages/rac-crewai/src packages/rac-llamaindex/src packages/rac-semantic-kernel/src
NO_MKDOCS_2_WARNING=1 run mkdocs build --strict --quiet --site-dir site
set +e
"$UV" run --frozen pytest "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
  echo "pytest collected no tests: failing" >&2
  exit 1
fi
exit "$status"
