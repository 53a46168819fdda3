"""`python -m evalrelay`: the `evalrelay` command."""

from evalrelay.bridge.cli.main import main

main()
