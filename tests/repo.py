"""Where the repository's parts are, for tests in any subdirectory."""
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "examples"
