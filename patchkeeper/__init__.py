"""patchkeeper: keep local fixes alive across upstream updates of a git-installed project."""

try:  # written by setuptools-scm when the package is built or installed (editable too)
    from patchkeeper._version import __version__
except ImportError:  # a source tree run in place, never built
    __version__ = "0+unknown"
