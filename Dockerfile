# One image for the TUI and the node agent: Debian 12's python3.11, the dependencies
# pyproject.toml lists, the project's wheel; entrypoint `probetui`, run as a fixed non-root user.
#
#   docker build -t probetui .
#   docker run --rm probetui check --tcp HOST:PORT
#
# The e2e cluster builds the same image by hand (tests/e2e/pyimage.py; no Docker engine there) and
# tests/test_dockerfile.py keeps the two in step: base, Python, site directories, user, workdir,
# entrypoint and console script.

FROM debian:bookworm-slim AS build
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.11 python3-pip \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src
# the dependencies first, from pyproject.toml alone: a layer that outlives changes to the code
COPY pyproject.toml ./
RUN python3.11 -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
 && python3.11 -m pip install --no-cache-dir --only-binary=:all: --target /out/usr/lib/python3/dist-packages -r /tmp/requirements.txt \
 && rm -rf /out/usr/lib/python3/dist-packages/bin
COPY . .
RUN python3.11 -m pip wheel --no-cache-dir --no-deps -w /dist . \
 && python3.11 -m pip install --no-cache-dir --no-deps --target /out/usr/local/lib/python3.11/dist-packages /dist/probetui-*.whl \
 && rm -rf /out/usr/local/lib/python3.11/dist-packages/bin

FROM debian:bookworm-slim
RUN apt-get update \
 && apt-get install -y --no-install-recommends python3.11 \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 nonroot \
 && useradd --uid 65532 --gid 65532 --home-dir /home/nonroot --create-home --shell /usr/sbin/nologin nonroot
COPY --from=build /out/ /
RUN printf '#!/usr/bin/python3.11\nimport sys\nfrom probetui.cli import main\nsys.exit(main())\n' > /usr/local/bin/probetui \
 && chmod 0755 /usr/local/bin/probetui
ENV PATH=/usr/local/bin:/usr/bin:/bin HOME=/home/nonroot
USER 65532:65532
WORKDIR /home/nonroot
ENTRYPOINT ["probetui"]
