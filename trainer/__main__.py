"""`python -m trainer` is `python -m trainer.run`."""

from __future__ import annotations

import sys

from trainer.run import main

sys.exit(main())
