"""Tool-calling evaluation: datasets, parsers, schema checks, matching, runners."""
