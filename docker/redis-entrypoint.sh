#!/bin/sh
# Redis with its users' passwords from files (Docker secrets): REDIS_PASSWORD_FILE for the
# `evalrelay` user the services connect as, REDIS_ADMIN_PASSWORD_FILE for `admin` (`gc`,
# redis-cli; without it the admin user stays off). Only each password's SHA-256 goes into
# the configuration, written at start to a file only Redis's user reads; no password is
# ever on a command line, where `ps` and `docker inspect` would show it. REDIS_MAXMEMORY
# sets the ceiling.
set -eu
: "${REDIS_PASSWORD_FILE:?set REDIS_PASSWORD_FILE to a file holding the password}"

# The SHA-256 of the first line of a password file (Redis's `#<hash>` ACL rule).
hashed() {
    if [ ! -r "$1" ]; then
        echo "redis-entrypoint: $2 names $1, which cannot be read" >&2
        exit 1
    fi
    head -n 1 "$1" | tr -d '\n' | sha256sum | cut -d ' ' -f 1
}

worker=$(hashed "$REDIS_PASSWORD_FILE" REDIS_PASSWORD_FILE)
if [ -n "${REDIS_ADMIN_PASSWORD_FILE:-}" ]; then
    admin=$(hashed "$REDIS_ADMIN_PASSWORD_FILE" REDIS_ADMIN_PASSWORD_FILE)
    admin_state=on
else
    admin=$(head -c 32 /dev/urandom | sha256sum | cut -d ' ' -f 1) admin_state=off
fi
conf=/tmp/redis.conf
umask 077
{
    echo "include /etc/evalrelay/redis.conf"
    echo "maxmemory ${REDIS_MAXMEMORY:-1gb}"
    sed -e '/^#/d' -e "s/@EVALRELAY_SHA256@/$worker/" -e "s/@ADMIN_SHA256@/$admin/" \
        -e "s/^user admin on /user admin $admin_state /" /etc/evalrelay/redis-users.acl
} > "$conf"
exec redis-server "$conf" "$@"
