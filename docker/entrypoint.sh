#!/bin/sh
# Entry point of the evalrelay images: secrets come from files, never from the
# container's configuration (which `docker inspect` shows to anyone with the socket).
#   NAME_FILE=/run/secrets/x   sets NAME to the file's content (API keys, tokens)
#   REDIS_PASSWORD_FILE        EVALRELAY_REDIS_URL, the password escaped (redis_url.py),
#                              unless EVALRELAY_REDIS_URL is set
# then runs `evalrelay ARGS`, or `celery ARGS` (Flower) when the first is `celery`.
# A NAME_FILE naming an empty file, or none (Docker mounts a missing secret as a folder),
# leaves NAME unset: a target that needs that key then fails saying which it lacks.
set -eu

for assignment in $(env | sed -n 's/^\([A-Za-z_][A-Za-z0-9_]*\)_FILE=.*/\1/p'); do
    file=$(printenv "${assignment}_FILE")
    [ "$assignment" = REDIS_PASSWORD ] && continue
    unset "${assignment}_FILE"
    [ -f "$file" ] || continue
    if [ ! -r "$file" ]; then
        echo "evalrelay-entrypoint: ${assignment}_FILE names $file, which this user" \
            "(uid $(id -u)) cannot read" >&2
        exit 1
    fi
    value=$(cat "$file")
    if [ -n "$value" ]; then export "$assignment=$value"; fi
done

if [ -z "${EVALRELAY_REDIS_URL:-}" ] && [ -n "${REDIS_PASSWORD_FILE:-}" ]; then
    if [ ! -r "$REDIS_PASSWORD_FILE" ]; then
        echo "evalrelay-entrypoint: REDIS_PASSWORD_FILE names $REDIS_PASSWORD_FILE, which" \
            "cannot be read" >&2
        exit 1
    fi
    EVALRELAY_REDIS_URL=$(python3 /usr/local/lib/evalrelay/redis_url.py)
    export EVALRELAY_REDIS_URL
    unset REDIS_PASSWORD_FILE
fi

if [ "${1:-}" = celery ]; then
    export CELERY_BROKER_URL="${EVALRELAY_REDIS_URL:?set REDIS_PASSWORD_FILE or EVALRELAY_REDIS_URL}"
    exec "$@"
fi
exec evalrelay "$@"
