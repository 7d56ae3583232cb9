"""Demo service for the impact scenarios: one endpoint that calls an upstream.

Run the local upstream first (python examples/app/upstream.py), then:

    export UPSTREAM_URL=http://127.0.0.1:34000   # through the fault proxy the scenario starts
    fastapi dev examples/app/app.py --port 9090
"""

import os

import httpx
from fastapi import FastAPI

UPSTREAM_URL = os.getenv("UPSTREAM_URL", "http://127.0.0.1:7070")

app = FastAPI()


@app.get("/")
def index():
    return httpx.get(f"{UPSTREAM_URL}/todos/1").json()
