"""Wire formats read into spans: OTLP/JSON and protobuf, SDK span lists, Jaeger, Tempo, OTLP
log records, and the span trees other products export (OpenAI Agents SDK, LangSmith,
Langfuse). Nothing here interprets what a span means."""
