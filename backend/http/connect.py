"""``GET /connect``: how to use the app from other programs, with a key for this browser.

The page gives the OpenAI-compatible base URL (``/v1``), the MCP URL (``/mcp``) and a bearer
key for the owner of the browser that opens it: the anonymous visitor of its cookie, or the
logged-in user. Calls made with the key are that owner's, so they appear in this browser's
history and open in the page with their full trace; without a key, a program is a visitor of
its own (the demo's anonymous rules). The key expires after ``AUDIO_AGENT_TOKEN_DAYS``.
"""

from __future__ import annotations

import html
import json

from fastapi import Depends, FastAPI, Request
from fastapi.responses import HTMLResponse, Response

from backend.access.auth import current_owner
from backend.access.identity import USER_PREFIX, VISITOR_PREFIX, Identity

CONNECT_PATH = "/connect"
PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width">
<title>Use it from other programs · Ask about audio</title>
<style>
body{{font-family:system-ui,sans-serif;max-width:52rem;margin:2rem auto;padding:0 1rem;
color:#1f2328;line-height:1.5}}
code,pre{{background:#f3f4f6;border-radius:6px;padding:.1rem .3rem;overflow-wrap:anywhere}}
pre{{padding:.8rem;white-space:pre-wrap}}
.key{{font-size:.9rem}}
#upload-link{{overflow-wrap:anywhere}}
</style></head><body>
<h1>Use it from other programs</h1>
<p><a href="{home}">Back to the chat</a></p>
<h2>OpenAI-compatible API</h2>
<p>Base URL: <code id="base-url">{v1}</code>. Models: <code>GET {v1}/models</code>.</p>
<h2>MCP server</h2>
<p>Streamable HTTP: <code id="mcp-url">{mcp}</code></p>
<h2>Your key</h2>
{key_section}
<h2>A link to a recording</h2>
<p>Some chat front ends (Open WebUI) transcribe an attached recording themselves instead of
sending it to the model. Upload it here and paste its link into your message instead.</p>
<form id="upload-form" data-base="{base}">
<label for="upload-file">Recording</label>
<input id="upload-file" name="file" type="file" accept="audio/*,video/webm" required>
<button type="submit">Upload</button>
</form>
<p id="upload-link" role="status" aria-live="polite"></p>
<h2>Examples</h2>
<pre>{examples}</pre>
<script src="{script}"></script>
</body></html>"""
SCRIPT = """
document.getElementById("upload-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const form = event.target;
  const out = document.getElementById("upload-link");
  const body = new FormData(form);
  out.textContent = "Uploading…";
  try {
    const response = await fetch(form.dataset.base + "/api/audio", {method: "POST", body});
    const data = await response.json();
    out.textContent = response.ok ? form.dataset.base + data.url : data.detail;
  } catch (error) {
    out.textContent = "The upload failed: " + error;
  }
});
"""
KEY_SECTION = """<p>Send it as <code>Authorization: Bearer &lt;key&gt;</code> (the OpenAI SDK's
<code>api_key</code>). What a program asks with it is yours: it appears in this browser's
history. Keep it like a password; it expires in {days:g} days.</p>
<pre class="key" id="api-key">{key}</pre>"""
NO_KEY = """<p>Keys are given to visitors and to users of this server's own login; you are
signed in another way ({who}). Programs can still use the app without a key, as visitors of
their own.</p>"""


def key_for(identity: Identity, owner: str) -> str | None:
    """A bearer key for ``owner`` (a visitor without login, or a user with it), else None."""
    if owner.startswith(VISITOR_PREFIX) and not identity.login_required:
        return identity.token_for(owner)
    if owner.startswith(USER_PREFIX) and identity.login_required:
        return identity.token_for(owner)
    return None


def examples(base: str, key: str) -> str:
    server = {"type": "http", "url": f"{base}/mcp", "headers": {"Authorization": f"Bearer {key}"}}
    vscode = {"servers": {"ask-about-audio": server}}
    return "\n".join(
        [
            f'curl {base}/v1/models -H "Authorization: Bearer {key}"',
            "",
            "from openai import OpenAI",
            f'client = OpenAI(base_url="{base}/v1", api_key="{key}")',
            "",
            "# VS Code, .vscode/mcp.json:",
            json.dumps(vscode, indent=2),
        ]
    )


def install(app: FastAPI, identity: Identity) -> None:
    @app.get(CONNECT_PATH + "/upload.js", include_in_schema=False)
    def script() -> Response:
        """The upload form's script, a file of its own (no inline script on the page)."""
        return Response(SCRIPT, media_type="text/javascript")

    @app.get(CONNECT_PATH, include_in_schema=False)
    def connect(request: Request, owner: str = Depends(current_owner)) -> HTMLResponse:
        base = str(request.base_url).rstrip("/")
        key = key_for(identity, owner)
        section = (
            KEY_SECTION.format(key=html.escape(key), days=identity.token_days)
            if key
            else NO_KEY.format(who=html.escape(owner.split(":", 1)[0]))
        )
        page = PAGE.format(
            base=html.escape(base),
            script=html.escape(base + CONNECT_PATH + "/upload.js"),
            home=html.escape(base + "/"),
            v1=html.escape(base + "/v1"),
            mcp=html.escape(base + "/mcp"),
            key_section=section,
            examples=html.escape(examples(base, key or "<key>")),
        )
        # The key is a credential: never cached, never sent on as a referrer.
        headers = {"Cache-Control": "no-store", "Referrer-Policy": "no-referrer"}
        return HTMLResponse(page, headers=headers)
