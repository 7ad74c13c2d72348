"""The single source of the package version (read by hatchling and by `tcast.__version__`)."""

__version__ = "0.1.0"
