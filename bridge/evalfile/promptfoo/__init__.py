"""promptfoo's `promptfooconfig.yaml`, read as promptfoo's configuration reference defines
it and rewritten into the suite document the AgentV suite reader takes, so one loader,
prompt builder and grader serve every format."""
