# Engram API image. CPU-only torch keeps the image small (no CUDA wheels).
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    HF_HUB_OFFLINE=1 \
    ENGRAM_HOST=0.0.0.0 \
    ENGRAM_PORT=8000

WORKDIR /srv/engram

RUN pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu

COPY pyproject.toml setup.py MANIFEST.in README.md alembic.ini ./
COPY app ./app
COPY alembic ./alembic
COPY clients/python ./clients/python
RUN pip install -e ./clients/python -e .

RUN useradd --create-home --uid 1000 engram
USER engram
# Export the model to ONNX at build time (offline), so a container starts without it.
RUN python -c "from app.embedding import get_embedder; get_embedder().load()"

EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=60s --retries=5 \
    CMD python -c "import urllib.request,sys; sys.exit(urllib.request.urlopen('http://127.0.0.1:8000/readyz').status != 200)"

CMD ["engram", "serve"]
