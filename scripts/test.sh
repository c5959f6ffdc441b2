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
pytest_pass() {
  set +e
  "$UV" run --frozen pytest "$@"
  local status=$?
  set -e
  if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: failing" >&2
    return 1
  fi
  return "$status"
}
echo "+ pytest $* (the call path's shortcut on)"
pytest_pass "$@"
# The differential run: the whole suite again with the blocking call path's one shortcut
# (rac.run.fast) off, so its general twin is held to every test too. RAC_DIFFERENTIAL=0 skips
# it locally; CI always runs it.
if [ "${RAC_DIFFERENTIAL:-1}" != "0" ] || [ -n "${CI:-}" ]; then
  echo "+ RAC_FAST_PATH=0 pytest $* (the shortcut off)"
  RAC_FAST_PATH=0 pytest_pass "$@"
fi
