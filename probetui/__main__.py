"""`python -m probetui` runs the same entry point as the `probetui` command."""

import sys

from probetui.cli import main

sys.exit(main())
