"""``python -m delta_layout ...`` runs the ``delta-layout`` command line."""
import sys

from . import _native


def main() -> None:
    """Runs the command line with ``sys.argv``'s arguments; exits with its exit code."""
    sys.exit(_native.main(sys.argv[1:]))


if __name__ == "__main__":
    main()
