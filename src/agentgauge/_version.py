"""The version of agentgauge: the one place it is written (the package's metadata reads it
when the distribution is built, ``agentgauge --version`` and ``agentgauge.__version__`` print
it)."""

__version__ = "0.1.0"
