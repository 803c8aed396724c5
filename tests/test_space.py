"""The generated Docker Space: its front matter (read by huggingface_hub's own parser), its
Dockerfile (the README's install line, uid 1000), its files, and the app started from it with
the environment a Space sets (SPACE_ID, PORT, persistent storage or none)."""

from __future__ import annotations

import re
from pathlib import Path

import httpx
import pytest
from huggingface_hub import SpaceCard as HubSpaceCard

from backend.host import space
from storage import location
from tests.servers import ROOT, AppProcess


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("space") / "out"
    assert space.main([str(out), "--oauth", "--license", "apache-2.0"]) == 0
    return out


def test_front_matter_is_a_valid_docker_space_card(generated: Path) -> None:
    card = HubSpaceCard.load(generated / "README.md")
    data = card.data.to_dict()
    assert data["sdk"] == "docker"
    assert data["app_port"] == 7860
    assert data["title"] == "Ask about audio"
    assert data["license"] == "apache-2.0"
    assert data["hf_oauth"] is True
    assert data["colorFrom"] in space.SPACE_COLORS and data["colorTo"] in space.SPACE_COLORS
    assert 0 < len(data["short_description"]) <= space.SHORT_DESCRIPTION_MAX
    assert data["emoji"]
    assert "AUDIO_AGENT_SECRET" in card.text and "/data" in card.text


def test_dockerfile_installs_the_readmes_locks_and_runs_as_uid_1000(generated: Path) -> None:
    dockerfile = (generated / "Dockerfile").read_text()
    readme = (ROOT / "README.md").read_text()
    run_it = re.search(r"^## Run it\n.*?```bash\n(.+?)\n", readme, re.S | re.M)
    assert run_it and run_it[1] == space.INSTALL + " && python app.py"
    installs = re.findall(r"^RUN (pip install .*)$", dockerfile, re.M)
    assert installs == [space.INSTALL]
    assert "useradd --create-home --uid 1000 user" in dockerfile
    assert dockerfile.index("USER user") > dockerfile.index("RUN pip install")
    # the work folder itself belongs to the user: without storage the app makes ./data there
    workdir = dockerfile.index("WORKDIR /home/user/app")
    assert dockerfile.index("RUN chown user:user /home/user/app") > workdir
    assert 'CMD ["python", "app.py"]' in dockerfile
    assert "EXPOSE 7860" in dockerfile


def test_the_folder_holds_the_app_and_leaves_data_tests_and_caches_out(generated: Path) -> None:
    for needed in (
        "app.py",
        "agent/run.py",
        "backend/host/space.py",
        "frontend",
        "storage",
        "config/models.toml",
        "requirements.lock",
        "requirements-nodeps.lock",
    ):
        assert (generated / needed).exists(), needed
    files = [p.relative_to(generated).as_posix() for p in generated.rglob("*") if p.is_file()]
    assert not [f for f in files if f.startswith(("tests/", "data/", ".ci/", "docs/"))]
    assert not [f for f in files if "__pycache__" in f or f.endswith(".pyc")]
    for ignore in (".gitignore", ".dockerignore"):
        assert "data/" in (generated / ignore).read_text().split()
    assert "*.wav filter=lfs" in (generated / ".gitattributes").read_text()


def test_the_command_refuses_a_full_folder_and_a_bad_card(tmp_path: Path, capsys) -> None:  # type: ignore[no-untyped-def]
    (tmp_path / "keep.txt").write_text("mine")
    assert space.main([str(tmp_path)]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (tmp_path / "keep.txt").read_text() == "mine"
    assert space.main([str(tmp_path / "new"), "--description", "x" * 61]) == 2
    assert "short description" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_data_dir_on_a_space_is_its_persistent_storage(tmp_path: Path) -> None:
    storage = tmp_path / "data"
    on_space = {"SPACE_ID": "someone/ask"}
    assert location.default_data_dir(on_space, storage) == Path("data")  # no storage yet
    storage.mkdir()
    assert location.default_data_dir(on_space, storage) == storage
    assert location.default_data_dir({}, storage) == Path("data")  # not a Space
    mine = {**on_space, "AUDIO_AGENT_DATA_DIR": str(tmp_path / "mine")}
    assert location.default_data_dir(mine, storage) == tmp_path / "mine"


def test_notices_say_what_a_space_lacks(tmp_path: Path) -> None:
    storage = tmp_path / "data"
    on_space = {"SPACE_ID": "someone/ask"}
    assert space.space_notices({}, Path("data"), storage) == []  # not a Space: nothing
    temporary, secret = space.space_notices(on_space, Path("data"), storage)
    assert temporary.startswith("History is temporary: this Space has no persistent storage")
    assert "AUDIO_AGENT_SECRET is not set" in secret and "restart wipes" in secret
    storage.mkdir()
    [secret] = space.space_notices(on_space, storage, storage)
    assert "AUDIO_AGENT_SECRET is not set" in secret and "wipes" not in secret
    assert space.space_notices({**on_space, "AUDIO_AGENT_SECRET": "s"}, storage, storage) == []


def start_space(generated: Path, tmp_path: Path, storage: Path) -> AppProcess:
    """The app from the generated folder with the environment a Space sets."""
    return AppProcess(
        tmp_path / "space.log",
        {
            "SPACE_ID": "someone/ask-about-audio",
            "AUDIO_AGENT_SPACE_STORAGE": str(storage),
            "HOME": str(tmp_path),
        },
        cwd=generated,
        # A Space sets none of these: the port comes from PORT, data from the storage.
        unset=(
            "AUDIO_AGENT_DATA_DIR",
            "AUDIO_AGENT_SECRET",
            "AUDIO_AGENT_PORT",
            "PYTHONPATH",
            "AUDIO_AGENT_HOST",
            "AUDIO_AGENT_USERS",
            "AUDIO_AGENT_TEST_REGISTRY",
        ),
        port_env="PORT",
    )


def test_the_generated_space_starts_keeps_its_data_and_serves_the_page_in_an_iframe(
    generated: Path, tmp_path: Path
) -> None:
    storage = tmp_path / "persistent"
    storage.mkdir()
    app = start_space(generated, tmp_path, storage)
    try:
        health = httpx.get(f"{app.base}/api/health", timeout=10).json()
        assert health["status"] == "ok" and health["storage"] == "persistent"
        assert "History is temporary" not in httpx.get(f"{app.base}/config", timeout=30).text
        tools = httpx.get(f"{app.base}/api/catalogue", timeout=30).json()["tools"]
        local = [t["name"] for t in tools if t["local"]]
        missing = [t["name"] for t in tools if t["local"] and not t["available"]]
        assert local and not missing  # every offline tool ships in the image's wheels
        page = httpx.get(f"{app.base}/", timeout=30, headers={"Sec-Fetch-Dest": "iframe"})
        assert page.status_code == 200 and "<html" in page.text.lower()
        assert "x-frame-options" not in page.headers  # huggingface.co shows it in an iframe
        csp = page.headers.get("content-security-policy", "")
        assert "frame-ancestors 'self' https://huggingface.co" in csp
        cookie = page.headers.get("set-cookie", "")
        assert "samesite=none" in cookie.lower() and "secure" in cookie.lower()
    finally:
        app.stop()
    assert (storage / "audio_agent.sqlite3").is_file()  # the data lives on the storage
    assert (storage / "secret_key").is_file()
    log = (tmp_path / "space.log").read_text()
    assert "AUDIO_AGENT_SECRET is not set" in log and "History is temporary" not in log


def test_without_persistent_storage_the_space_says_history_is_temporary(
    generated: Path, tmp_path: Path
) -> None:
    app = start_space(generated, tmp_path, tmp_path / "no-storage")
    try:
        health = httpx.get(f"{app.base}/api/health", timeout=10).json()
        assert health["storage"] == "temporary"
        page = httpx.get(f"{app.base}/config", timeout=30)  # what the page draws
        assert page.status_code == 200 and "History is temporary" in page.text
    finally:
        app.stop()
    assert "History is temporary" in (tmp_path / "space.log").read_text()
    assert (generated / "data" / "audio_agent.sqlite3").is_file()
