#!/bin/sh
# Redis with its password from a file (REDIS_PASSWORD_FILE, a Docker secret): the
# password goes into a configuration file only Redis's user reads, never on its command
# line, where `ps` and `docker inspect` would show it. REDIS_MAXMEMORY sets the ceiling.
set -eu
: "${REDIS_PASSWORD_FILE:?set REDIS_PASSWORD_FILE to a file holding the password}"
if [ ! -r "$REDIS_PASSWORD_FILE" ]; then
    echo "redis-entrypoint: REDIS_PASSWORD_FILE names $REDIS_PASSWORD_FILE, which cannot be read" >&2
    exit 1
fi
conf=/tmp/redis.conf
umask 077
{
    echo "include /etc/evalrelay/redis.conf"
    echo "maxmemory ${REDIS_MAXMEMORY:-1gb}"
    printf 'requirepass "%s"\n' "$(sed -e 's/\\/\\\\/g' -e 's/"/\\"/g' "$REDIS_PASSWORD_FILE" | head -n 1)"
} > "$conf"
exec redis-server "$conf" "$@"
