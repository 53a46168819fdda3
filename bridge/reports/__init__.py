"""Reports of a finished campaign: HTML for people, JUnit XML for CI, Markdown for both."""
