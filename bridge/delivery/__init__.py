"""Delivery: how each job reaches one worker, runs once and reports once, and how a dead
worker's jobs are sent again. Every record between a message leaving its queue and its
result on the stream lives here:

- `payloads`: what a message carries of a job, and the job a worker makes of it again;
- `outstanding`: each job sent and not yet finished, written when it is sent, and the
  lost ones found among them;
- `holders`: who holds each taken message, and the `alive` heartbeat of each worker
  process; `holds`: a thread-pool worker's records of holding, written in the background;
- `lease`: the lease a running job holds, renewed by a heartbeat thread;
- `publish`: a result put on its campaign's stream at most once per attempt;
- `round_trips`: the lease and publish scripts of an event loop's jobs, sent together;
- `reaper`: the thread every worker runs that sends again the jobs of dead workers.

The Lua scripts these run are in `bridge.lua_scripts`, each under its legend; the
guarantees they keep are in docs/guarantees.md.

Both sides import this package: the submitting side writes the outstanding records and
reads the holders (`status`, `health`), the worker takes leases, publishes, and runs the
reaper. It lives in `bridge` because the bridge never imports `worker` (import-linter
holds this), and it sits below `bridge.queue`, beside `bridge.planning`: it knows jobs,
results and Redis, never Celery's queues, plans or eval files. What binds it to a Celery
worker process (handing jobs back at a stop, `worker.stopping`; the broker transport
riding out a Redis restart, `worker.broker`) stays in `worker`.
"""
