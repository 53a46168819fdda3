"""What the submitting side and the worker both read: the wire job, the stored-job codec,
the queue and task names, and the campaign state both sides touch in Redis.

It imports neither side's machinery: no eval-file loader, translator or template engine,
no `bridge.queue` and no `worker` (import-linter holds this), so a worker that imports it
loads only models."""
