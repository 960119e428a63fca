"""Readers and writers of traces."""

from agentgauge.io.jsonl import (
    RawLine,
    ReadError,
    iter_raw_lines,
    parse_line,
    read_traces,
    write_traces,
)

__all__ = ["RawLine", "ReadError", "iter_raw_lines", "parse_line", "read_traces", "write_traces"]
