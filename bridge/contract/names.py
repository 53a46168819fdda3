"""The names both sides address each other by: Celery's task names and the queues."""

RUN_CASE = "evalrelay.run_case"
"""The Celery task that runs one job: agent jobs travel so, one to a message."""

RUN_BATCH = "evalrelay.run_batch"
"""The Celery task that runs a batch of API jobs of one target on the worker's event loop."""

QUEUES = ("api", "agent.vscode", "agent.codex", "agent.cli", "task")
"""Every queue; `task` runs container tasks (Harbor's format), one trial a job."""
