"""Tool-calling evaluation: dataset formats, output parsers, schema checks, call matching,
BFCL's checker, runners."""
