"""Step 3: jobs on Redis. The Celery queue, blobs, campaigns, and the Redis a command uses
(an embedded one, when no cluster's is configured). Delivery (leases, holders, the
reaper) is `bridge.delivery`."""
