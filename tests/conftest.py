"""Makes the shared helpers here (support, fake_openai, fixtures/) importable from every layer:
unit/ (in process), e2e/ (the server over stdio) and clients/ (the editor clients)."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))
