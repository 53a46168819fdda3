"""Step 1 of the data path: reading eval files, checking them, resolving attached files."""
