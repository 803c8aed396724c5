"""The lock files agree with their inputs, with each other, with the README and the Dockerfile.

The README's two commands install from `requirements*.lock` (exact versions with hashes); the
loose `requirements*.txt` are what the locks are compiled from (`.ci/lock`). These checks fail
when an input asks for something its lock does not satisfy (a dependency added without
re-locking), when the app's and the tests' locks pin a shared package differently, or when
the README or the Dockerfile install something else.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
# What the locks are resolved for (see .ci/lock).
TARGET = {
    "python_version": "3.11",
    "python_full_version": "3.11.0",
    "sys_platform": "linux",
    "platform_system": "Linux",
    "platform_machine": "x86_64",
    "os_name": "posix",
    "implementation_name": "cpython",
    "platform_python_implementation": "CPython",
}
FORBIDDEN = {"torch", "torchaudio", "tensorflow"}


def loose_requirements(name: str) -> list[Requirement]:
    """The requirements of an input file, following `-r other.txt` lines."""
    found: list[Requirement] = []
    for raw in (ROOT / name).read_text().splitlines():
        line = raw.split(" #")[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("-r "):
            found += loose_requirements(line[3:].strip())
            continue
        found.append(Requirement(line))
    return found


def lock_pins(name: str) -> dict[str, tuple[str, int]]:
    """Package -> (pinned version, number of hashes) from a `uv pip compile` lock file."""
    text = (ROOT / name).read_text()
    pins: dict[str, tuple[str, int]] = {}
    for block in re.split(r"\n(?=[A-Za-z0-9])", text):
        head = re.match(r"([A-Za-z0-9_.\-]+)(?:\[[^\]]*\])?==([^\s\\;]+)", block)
        if head:
            pins[canonicalize_name(head[1])] = (head[2], block.count("--hash=sha256:"))
    return pins


LOCKS = {
    "requirements.txt": "requirements.lock",
    "requirements-dev.txt": "requirements-dev.lock",
    "requirements-nodeps.txt": "requirements-nodeps.lock",
}


@pytest.mark.parametrize(("loose", "lock"), sorted(LOCKS.items()))
def test_every_input_requirement_is_satisfied_by_its_lock(loose: str, lock: str) -> None:
    pins = lock_pins(lock)
    missing = []
    for req in loose_requirements(loose):
        if req.marker is not None and not req.marker.evaluate(TARGET):
            continue
        pinned = pins.get(canonicalize_name(req.name))
        if pinned is None or not req.specifier.contains(pinned[0], prereleases=True):
            missing.append(f"{req} (lock: {pinned[0] if pinned else 'absent'})")
    assert not missing, f"{lock} does not satisfy {loose}; run .ci/lock: {missing}"


@pytest.mark.parametrize("lock", sorted(LOCKS.values()))
def test_every_pin_has_a_hash_and_none_is_heavy(lock: str) -> None:
    pins = lock_pins(lock)
    assert pins, f"{lock} has no pins"
    assert not [name for name, (_, hashes) in pins.items() if hashes == 0]
    assert not FORBIDDEN & set(pins), f"{lock} pins {FORBIDDEN & set(pins)}"


def test_the_tests_run_on_the_apps_versions() -> None:
    app, dev = lock_pins("requirements.lock"), lock_pins("requirements-dev.lock")
    differ = {n: (app[n][0], dev[n][0]) for n in app if n in dev and app[n][0] != dev[n][0]}
    assert not differ, f"app and test locks pin differently: {differ}"
    assert set(app) <= set(dev), f"the test lock lacks {set(app) - set(dev)}"


def test_the_no_deps_lock_holds_only_the_model_wheels() -> None:
    loose = {canonicalize_name(r.name): r for r in loose_requirements("requirements-nodeps.txt")}
    assert set(lock_pins("requirements-nodeps.lock")) == set(loose)


def readme_command(section: str) -> str:
    text = (ROOT / "README.md").read_text()
    block = re.search(rf"^## {section}\n.*?```bash\n(.+?)\n", text, re.S | re.M)
    assert block, f"README has no command under '## {section}'"
    return block[1]


def test_the_readme_commands_install_from_the_locks() -> None:
    run, test = readme_command("Run it"), readme_command("Test it")
    assert run == (
        "pip install -r requirements.lock && pip install --no-deps -r requirements-nodeps.lock"
        " && python app.py"
    )
    assert test == (
        "pip install -r requirements-dev.lock && pip install --no-deps -r"
        " requirements-nodeps.lock && python -m pytest"
    )


def test_the_dockerfile_installs_what_the_readme_installs() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    install = re.search(r"^RUN (pip install (?:.*\\\n)*.*)$", dockerfile, re.M)
    assert install, "Dockerfile has no pip install"
    docker_install = " ".join(install[1].replace("\\\n", " ").split())
    readme_install = readme_command("Run it").removesuffix(" && python app.py")
    assert docker_install == readme_install
