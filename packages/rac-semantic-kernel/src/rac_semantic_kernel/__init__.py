"""RAC for Semantic Kernel kernels, agents and orchestrations."""

__version__ = "0.1.0"
