"""The executing side of evalrelay: Celery workers that run jobs and report results."""
