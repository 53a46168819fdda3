"""Print the Redis URL for the password in REDIS_PASSWORD_FILE (REDIS_HOST, default
`redis`; REDIS_PORT, 6379; REDIS_DB, 0; REDIS_SCHEME, `redis`, or `rediss` for TLS).

Everything in the password but letters and digits is escaped: an `@ / : # ? %` would
otherwise end or change the URL's user part, and redis-py would try another password.
"""

import os
import sys
import urllib.parse

with open(os.environ["REDIS_PASSWORD_FILE"], encoding="utf-8") as file:
    password = file.read().rstrip("\n")
scheme = os.environ.get("REDIS_SCHEME", "redis")
host = os.environ.get("REDIS_HOST", "redis")
port = os.environ.get("REDIS_PORT", "6379")
db = os.environ.get("REDIS_DB", "0")
sys.stdout.write(f"{scheme}://:{urllib.parse.quote(password, safe='')}@{host}:{port}/{db}")
