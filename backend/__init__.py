"""The server side: everything between the agent and storage below and the page above.

- ``http/``: the HTTP fronts: REST + SSE (``api``), the OpenAI-compatible ``/v1``, MCP (over
  HTTP and stdio), connecting another program, share links.
- ``access/``: who may do what, and how much: identity, login, users, passwords, Hugging Face
  sign-in, the Gradio guards, security headers, clients, and the body, connection, log and
  upload limits.
- ``runs/``: the run manager (``runs.manager``) and what it owns: admission, queue, limits,
  fairness, leases, the live run, its writer.
- ``service/``: the use cases shared by the API and the UI (``AgentService``), titles,
  retention, the owner-scoped view.
- ``host/``: settings and where it runs: hosting checks, a Hugging Face Space, start-up.
- ``benchmarks/``: stored benchmark runs and their analyses.
- ``errors``: ``ServiceError``, the one error every front turns into its own answer.
"""

from agent.commands import refuse_unless_command

refuse_unless_command(__name__, __file__)
