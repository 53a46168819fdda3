"""Step 4: the result of a job, and the collector that writes each one once to JSONL."""
