#!/usr/bin/env bash
# The whole test suite: lint, types, docs, tests. Any failure (pytest's "no tests ran" too) fails it.
#
# The PostgreSQL store's tests need a server: with RAC_TEST_POSTGRES_URL unset, this script
# starts one with .ci/postgres.sh (the script CI uses; it needs root and Debian's packages) and
# stops it again at the end if it started it. Where it cannot, those tests are skipped and the
# last line says how many and the one command that runs them.
set -euo pipefail
cd "$(dirname "$0")/.."
UV="${UV:-uv}"
run() { echo "+ $*"; "$UV" run --frozen "$@"; }

summary="$(mktemp)"
stop_postgres=""
cleanup() {
  rm -f "$summary"
  if [ -n "$stop_postgres" ]; then bash .ci/postgres.sh stop || true; fi
}
trap cleanup EXIT

# How to run the PostgreSQL tests when this script cannot start a server.
run_them='eval "$(sudo bash .ci/postgres.sh start)" && make test'
if [ -z "${RAC_TEST_POSTGRES_URL:-}" ]; then
  if [ "$(id -u)" = "0" ] && command -v apt-get >/dev/null 2>&1; then
    was_online="$(pg_lsclusters -h 2>/dev/null | awk '$4 ~ /online/' || true)"
    echo "+ bash .ci/postgres.sh start (a loopback PostgreSQL server for the store tests)"
    if pg_env="$(bash .ci/postgres.sh start)"; then
      eval "$pg_env"
      export RAC_TEST_POSTGRES_URL
      [ -n "$was_online" ] || stop_postgres=1  # started here: stopped at the end
    else
      echo "scripts/test.sh: .ci/postgres.sh could not start PostgreSQL (see above); its tests are skipped" >&2
    fi
  elif ! command -v apt-get >/dev/null 2>&1; then
    run_them='RAC_TEST_POSTGRES_URL=postgresql://USER:PASSWORD@127.0.0.1:5432/DB make test'
  fi
fi

run ruff check .
run mypy --strict packages/rac-core/src
run mypy packages/rac-langgraph/src packages/rac-crewai/src packages/rac-llamaindex/src packages/rac-semantic-kernel/src
NO_MKDOCS_2_WARNING=1 run mkdocs build --strict --quiet --site-dir site

color=()
[ -t 1 ] && color=(--color=yes)  # pytest's output goes through tee, not to the terminal
# pytest_pass FILE ARGS...: one pytest run, its output also written to FILE.
pytest_pass() {
  local out="$1"
  shift
  set +e
  "$UV" run --frozen pytest "${color[@]}" "$@" | tee "$out"
  local status=${PIPESTATUS[0]}
  set -e
  if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: failing" >&2
    return 1
  fi
  return "$status"
}
echo "+ pytest $* (the call path's shortcut on)"
pytest_pass "$summary" "$@"
# The differential run: the whole suite again with the blocking call path's one shortcut
# (rac.run.fast) off, so its general twin is held to every test too. RAC_DIFFERENTIAL=0 skips
# it locally; CI always runs it. The packaging tests (wheels into fresh environments) ran in the
# first pass and are not repeated (RAC_PACKAGING_TESTS=0).
if [ "${RAC_DIFFERENTIAL:-1}" != "0" ] || [ -n "${CI:-}" ]; then
  echo "+ RAC_FAST_PATH=0 pytest $* (the shortcut off)"
  RAC_PACKAGING_TESTS=0 RAC_FAST_PATH=0 pytest_pass /dev/null "$@"
fi

# The last line: the PostgreSQL tests the first pass skipped for want of a server, and how to
# run them.
skipped="$(sed -E 's/\x1b\[[0-9;]*m//g' "$summary" \
           | { grep -E '^SKIPPED \[[0-9]+\].*RAC_TEST_POSTGRES_URL is not set' || true; } \
           | sed -E 's/^SKIPPED \[([0-9]+)\].*/\1/' | awk '{n += $1} END {print n + 0}')"
if [ "$skipped" -gt 0 ]; then
  echo "PostgreSQL tests skipped for want of a server: $skipped; run them with: $run_them"
fi
