#!/bin/sh
# Entry point of the evalrelay images: secrets come from files, never from the
# container's configuration (which `docker inspect` shows to anyone with the socket).
#   REDIS_PASSWORD_FILE        EVALRELAY_REDIS_URL with no password in it (redis_url.py:
#                              REDIS_USERNAME, REDIS_HOST, ...) and
#                              EVALRELAY_REDIS_PASSWORD_FILE, which evalrelay reads itself:
#                              the password is in no environment. Unless EVALRELAY_REDIS_URL
#                              is set.
#   NAME_FILE=/run/secrets/x   is left for evalrelay, which reads the file itself when it
#                              starts (bridge/secret_files.py): API keys are in its memory,
#                              never in an environment its children could read
# then runs `evalrelay ARGS`, or `celery ARGS` (Flower, whose broker URL must hold the
# password) when the first is `celery`.
set -eu

if [ -z "${EVALRELAY_REDIS_URL:-}" ] && [ -n "${REDIS_PASSWORD_FILE:-}" ]; then
    if [ ! -r "$REDIS_PASSWORD_FILE" ]; then
        echo "evalrelay-entrypoint: REDIS_PASSWORD_FILE names $REDIS_PASSWORD_FILE, which" \
            "cannot be read" >&2
        exit 1
    fi
    if [ "${1:-}" = celery ]; then
        CELERY_BROKER_URL=$(python3 /usr/local/lib/evalrelay/redis_url.py --with-password)
        export CELERY_BROKER_URL
        unset REDIS_PASSWORD_FILE
        exec "$@"
    fi
    EVALRELAY_REDIS_URL=$(python3 /usr/local/lib/evalrelay/redis_url.py)
    export EVALRELAY_REDIS_URL EVALRELAY_REDIS_PASSWORD_FILE="$REDIS_PASSWORD_FILE"
    unset REDIS_PASSWORD_FILE
fi

if [ "${1:-}" = celery ]; then
    export CELERY_BROKER_URL="${EVALRELAY_REDIS_URL:?set REDIS_PASSWORD_FILE or EVALRELAY_REDIS_URL}"
    exec "$@"
fi
exec evalrelay "$@"
