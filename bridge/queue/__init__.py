"""Step 3: jobs on Redis. The Celery queue, blobs, campaigns, the reaper, and the Redis a
command uses (the cluster's or an embedded one)."""
