"""Serve every demo model of one task, each on its own port: ``python -m models_hub.demo.serve``.

    python -m models_hub.demo.serve sentiment [--ready-file F] [--port KEY=PORT ...]

Each served model of the task (``models_hub.demo.catalog``) gets a ``ModelServer`` in this
one process: on the port given with ``--port KEY=PORT``, else its catalog port, else (when
that port is taken) a free one. Once all listen, ``{KEY: URL}`` is written to the ready file
(atomically) and one line per model is printed. SIGTERM or SIGINT stops the servers and the
process exits with 0, without a traceback. No Django: the handlers and the server are plain
Python, so a demo server starts in a fraction of a second.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
from pathlib import Path

from models_hub.demo.catalog import DEMO_TASKS, DemoModel, served_models
from models_hub.server import ModelServer, load_handler, make_server

HOST = "127.0.0.1"


def bind(model: DemoModel, port: int | None, host: str = HOST) -> ModelServer:
    """Bind a server for ``model`` on ``port`` (or its catalog port); a taken port falls back
    to a free one."""
    handler = load_handler(model.handler, **model.kwargs)
    for candidate in dict.fromkeys([port, model.port, 0]):
        if candidate is None:
            continue
        try:
            return make_server(handler, host, candidate)
        except OSError:
            continue
    raise OSError(f"no port to serve {model.key} on")


def write_ready_file(path: Path, urls: dict[str, str]) -> None:
    """Write ``urls`` as JSON to ``path`` in one rename, so a reader never sees half of it."""
    partial = path.with_name(f".{path.name}.{os.getpid()}")
    partial.write_text(json.dumps(urls, indent=2, sort_keys=True), encoding="utf-8")
    os.replace(partial, path)


def parse_ports(items: list[str]) -> dict[str, int]:
    ports = {}
    for item in items:
        key, separator, value = item.partition("=")
        if not separator or not value.isdigit():
            raise SystemExit(f"--port wants KEY=PORT, got {item!r}")
        ports[key] = int(value)
    return ports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("task", choices=DEMO_TASKS)
    parser.add_argument("--ready-file", type=Path, help="write {key: url} here once serving")
    parser.add_argument("--port", action="append", default=[], metavar="KEY=PORT")
    parser.add_argument("--host", default=HOST)
    options = parser.parse_args(argv)
    ports = parse_ports(options.port)

    stop = threading.Event()
    for signal_number in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signal_number, lambda *_: stop.set())

    servers: dict[str, ModelServer] = {}
    started: list[ModelServer] = []
    try:
        for model in served_models(options.task):
            servers[model.key] = bind(model, ports.get(model.key), options.host)
        for server in servers.values():
            server.start_in_thread()
            started.append(server)
        urls = {key: server.url for key, server in servers.items()}
        for key, url in urls.items():
            print(f"demo model {key} at {url}", flush=True)
        if options.ready_file is not None:
            write_ready_file(options.ready_file, urls)
        stop.wait()
    except OSError as error:
        print(f"cannot serve the {options.task} demo models: {error}", file=sys.stderr)
        return 1
    finally:
        for server in started:
            server.shutdown()
        for server in servers.values():
            server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
