"""What every agent provider shares: templates, the attached files, the task markdown."""
