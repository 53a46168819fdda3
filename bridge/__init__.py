"""The submitting side of evalrelay: eval files in, jobs out, results collected."""
