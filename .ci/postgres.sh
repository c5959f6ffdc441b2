#!/usr/bin/env bash
# Start (or stop) a loopback PostgreSQL server for RAC's tests, on Debian, as root.
#
#   .ci/postgres.sh start   install PostgreSQL if missing, start the cluster, create the test
#                           role and database, and print:  export RAC_TEST_POSTGRES_URL=...
#   .ci/postgres.sh stop    stop the cluster
#
# Use it as:  eval "$(.ci/postgres.sh start)"
set -euo pipefail

ACTION="${1:-start}"
PG_ROLE="${RAC_PG_ROLE:-rac}"
PG_PASSWORD="${RAC_PG_PASSWORD:-rac}"
PG_DB="${RAC_PG_DB:-rac_test}"
PG_PORT="${RAC_PG_PORT:-5432}"

log() { echo "postgres.sh: $*" >&2; }

cluster() {
    # The newest installed major version and its "main" cluster.
    local version
    version="$(ls /usr/lib/postgresql 2>/dev/null | sort -n | tail -1)"
    [ -n "$version" ] || return 1
    echo "$version"
}

install_if_missing() {
    if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ -z "$(cluster || true)" ]; then
        log "installing PostgreSQL from the Debian packages"
        export DEBIAN_FRONTEND=noninteractive
        apt-get update >&2
        apt-get install -y postgresql >&2
    fi
}

psql_admin() {
    su postgres -c "psql -v ON_ERROR_STOP=1 -p $PG_PORT -qAt -c \"$1\""
}

case "$ACTION" in
    start)
        install_if_missing
        VERSION="$(cluster)"
        if ! pg_lsclusters -h | awk -v v="$VERSION" '$1==v && $2=="main"' | grep -q .; then
            log "creating cluster $VERSION/main"
            pg_createcluster "$VERSION" main -p "$PG_PORT" >&2
        fi
        if ! pg_lsclusters -h | awk -v v="$VERSION" '$1==v && $2=="main" {print $4}' \
                | grep -q online; then
            log "starting cluster $VERSION/main (loopback only)"
            pg_ctlcluster "$VERSION" main start -o "-c listen_addresses=127.0.0.1" >&2
        fi
        for _ in $(seq 1 50); do
            su postgres -c "pg_isready -q -h 127.0.0.1 -p $PG_PORT" && break
            sleep 0.2
        done
        if [ "$(psql_admin "SELECT 1 FROM pg_roles WHERE rolname='$PG_ROLE'")" != "1" ]; then
            psql_admin "CREATE ROLE $PG_ROLE LOGIN PASSWORD '$PG_PASSWORD'"
        fi
        if [ "$(psql_admin "SELECT 1 FROM pg_database WHERE datname='$PG_DB'")" != "1" ]; then
            psql_admin "CREATE DATABASE $PG_DB OWNER $PG_ROLE"
        fi
        echo "export RAC_TEST_POSTGRES_URL=postgresql://$PG_ROLE:$PG_PASSWORD@127.0.0.1:$PG_PORT/$PG_DB"
        ;;
    stop)
        VERSION="$(cluster || true)"
        if [ -n "$VERSION" ]; then
            pg_ctlcluster "$VERSION" main stop >&2 || true
        fi
        ;;
    *)
        echo "usage: $0 start|stop" >&2
        exit 2
        ;;
esac
