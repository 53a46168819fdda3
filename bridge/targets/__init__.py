"""Where cases run: `targets.yaml`, each target's typed settings, and `${VAR}` references."""
