"""Type stubs of the compiled extension (python/src/lib.rs)."""
from typing import Mapping, Optional

__version__: str

def run(argv: list[str]) -> tuple[int, str, str]:
    """Runs the command line ``argv`` (no program name) in-process: (exit code, stdout, stderr).
    Ctrl-C cancels the run (files written deleted, nothing committed), then raises
    KeyboardInterrupt."""

def main(argv: list[str]) -> int:
    """Runs the command line as the binary would (real stdout/stderr, signals): the exit code."""

def read_document(location: str, storage_options: Optional[Mapping[str, str]] = None) -> str:
    """The text of the document at ``location`` (local path or object URI). Raises OSError."""

def write_document(location: str, text: str, storage_options: Optional[Mapping[str, str]] = None) -> None:
    """Writes ``text`` at ``location`` under the rules of ``--out``. Raises ValueError."""

def command_options() -> dict[str, list[str]]:
    """The long options (no dashes) each command takes: ``{"optimize": ["zorder", ...]}``."""
