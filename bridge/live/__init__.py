"""`evalrelay serve`: every campaign as a page in a browser, updated while it runs."""
