"""tcast_torch: installable skeleton; the engine is not built yet, so it registers no engine."""

__version__ = "0.1.0"

__all__ = ["__version__"]
