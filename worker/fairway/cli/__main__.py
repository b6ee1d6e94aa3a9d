"""`python -m fairway.cli`: how `fairway up` starts its worker processes."""

import sys

from fairway.cli import main

sys.exit(main())
