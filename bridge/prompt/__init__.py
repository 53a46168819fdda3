"""Step 2: a loaded case becomes a request (`question`, `chat_prompt`, `guidelines`)."""
