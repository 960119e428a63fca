"""Tool-calling evaluation: dataset formats, output parsers, schema checks, call matching, runners."""
