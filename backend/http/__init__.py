"""The HTTP fronts: the REST API and its SSE streams, the OpenAI-compatible /v1, the MCP server
(over HTTP and stdio), connecting another program, share links, and the helpers that turn
request bodies into a run.
"""
