from __future__ import annotations

from filescout.cli import main

raise SystemExit(main())
