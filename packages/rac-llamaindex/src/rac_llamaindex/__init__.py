"""RAC for LlamaIndex agents and agent workflows."""

__version__ = "0.1.0"
