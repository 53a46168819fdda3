"""The `evalrelay` command line: one small module per command, wired up in `main`."""
