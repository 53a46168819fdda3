"""The drop folder: files saved into an inbox become campaigns."""
