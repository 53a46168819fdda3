"""Print the Redis URL for REDIS_HOST (default `redis`), REDIS_PORT (6379), REDIS_DB (0),
REDIS_SCHEME (`redis`, or `rediss` for TLS) and REDIS_USERNAME (the ACL user, none by
default). With `--with-password`, the password of REDIS_PASSWORD_FILE is in it (Flower,
which cannot read a file of its own); else it is not, and evalrelay reads it from the file
itself (EVALRELAY_REDIS_PASSWORD_FILE).

Everything in the password but letters and digits is escaped: an `@ / : # ? %` would
otherwise end or change the URL's user part, and redis-py would try another password.
"""

import os
import sys
import urllib.parse

user = urllib.parse.quote(os.environ.get("REDIS_USERNAME", ""), safe="")
if "--with-password" in sys.argv[1:]:
    with open(os.environ["REDIS_PASSWORD_FILE"], encoding="utf-8") as file:
        password = file.read().rstrip("\n")
    user += ":" + urllib.parse.quote(password, safe="")
scheme = os.environ.get("REDIS_SCHEME", "redis")
host = os.environ.get("REDIS_HOST", "redis")
port = os.environ.get("REDIS_PORT", "6379")
db = os.environ.get("REDIS_DB", "0")
userinfo = f"{user}@" if user else ""
sys.stdout.write(f"{scheme}://{userinfo}{host}:{port}/{db}")
