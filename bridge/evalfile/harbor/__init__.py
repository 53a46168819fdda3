"""Harbor's task folders (`task.toml`, `instruction.md`, `environment/`, `tests/`,
`solution/`, `steps/`), read as Harbor's task format defines them and planned as one job
per task, target and repeat; the worker runs each as a trial in the task's container."""
