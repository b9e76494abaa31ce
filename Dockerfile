# CPU image of latentfuzz. It installs and starts through the same Makefile targets that CI
# tests, so the image runs exactly the tested path.
FROM python:3.11-slim

RUN apt-get update && apt-get install -y --no-install-recommends make \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /app
COPY . /app
# Resolve the CPU wheel of torch from PyTorch's CPU index (the local file of the dev
# machines is not in the image).
ENV PIP_EXTRA_INDEX_URL=https://download.pytorch.org/whl/cpu \
    LATENTFUZZ_HOME=/data
RUN make install
VOLUME /data
EXPOSE 8501
# Inside a container the app must listen beyond loopback (ADDRESS); publish the port to
# 127.0.0.1 on the host: docker run -p 127.0.0.1:8501:8501 latentfuzz
CMD ["make", "run", "PORT=8501", "ADDRESS=0.0.0.0"]
