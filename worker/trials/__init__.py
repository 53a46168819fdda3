"""Container tasks' trials (Harbor's format) on a worker: the environment's image built
once per host, one container per trial with the task's limits and network policy, the
agent and then the task's own tests run inside it, the reward read from what they wrote."""
