"""Step 3: jobs on Redis. The job model, the Celery queue, blobs, campaigns, the reaper,
and the Redis a command uses (the cluster's or an embedded one)."""
