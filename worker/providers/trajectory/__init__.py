"""Each command-line agent's event stream read as one `bridge.results.trajectory.Trajectory`."""
