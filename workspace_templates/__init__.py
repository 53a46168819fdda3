"""Files copied into agent workspaces; packaged so a non-editable install has them too."""

from pathlib import Path

BUILTIN = Path(__file__).parent
