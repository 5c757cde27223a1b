"""`kagentd`: the long-running episode daemon (DESIGN §12).

Not built yet: the daemon, store, policy client and HTTP server are issue 4. Until then this
entry point says so and exits with status 2, rather than pretending to run.
"""

from __future__ import annotations

import sys


def main(argv: list[str] | None = None) -> int:
    sys.stderr.write(
        "kagentd: the daemon is not implemented yet (issue 4: store, policy client, episode loop,"
        " HTTP server).\nWhat works today: `kagent eval PROBLEM SOLUTION` grades a kernel; see README.md.\n"
    )
    return 2


if __name__ == "__main__":
    sys.exit(main())
