"""A tiny local upstream standing in for a public placeholder API.

    python examples/app/upstream.py [--port 7070]

Serves GET /todos/1 (JSON) and GET /bytes/N (N bytes) on 127.0.0.1 only.
"""

import argparse
import json
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

TODO = {"userId": 1, "id": 1, "title": "delectus aut autem", "completed": False}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real services do

    def do_GET(self) -> None:
        if self.path == "/todos/1":
            body = json.dumps(TODO).encode()
            content_type = "application/json"
        elif self.path.startswith("/bytes/") and self.path[7:].isdigit():
            body = bytes(i % 251 for i in range(int(self.path[7:])))
            content_type = "application/octet-stream"
        else:
            self.send_error(404)
            return
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, default=7070)
    args = parser.parse_args()
    server = ThreadingHTTPServer(("127.0.0.1", args.port), Handler)
    print(f"upstream on http://127.0.0.1:{args.port}")
    server.serve_forever()
