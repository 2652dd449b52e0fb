"""The load test's HTTP client (``bench/load.py``): cookies, form posts, no redirects, and a
POST never sent twice, against a real HTTP server on loopback.

The load test compares the examples it saw acknowledged with the rows in the database; a
client that resent a POST after a dropped connection could create an example twice."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs

import pytest

from bench.load import Arrivals, Client, Stats, pacing_report


class _Recorder(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive unless told otherwise
    seen: list[tuple[str, str, dict, str]] = []
    close_after_answer = False

    def _answer(self, status: int, body: bytes, headers: dict[str, str]) -> None:
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        # Close without saying so (no "Connection: close"), as a server does with an idle
        # keep-alive connection: the client finds out on its next request.
        self.close_connection = self.close_after_answer

    def do_GET(self):  # noqa: N802 - http.server's name
        self.seen.append(("GET", self.path, dict(self.headers), ""))
        if self.path == "/login":
            self._answer(
                200,
                "déjà".encode(),
                {"Set-Cookie": "csrftoken=abc; Path=/; SameSite=Lax"},
            )
        elif self.path == "/logout":
            self._answer(
                302,
                b"",
                {
                    "Location": "/",
                    "Set-Cookie": 'sessionid=""; expires=Thu, 01 Jan 1970 00:00:00 GMT; Max-Age=0',
                },
            )
        else:
            self._answer(200, b"ok", {})

    def do_POST(self):  # noqa: N802
        length = int(self.headers["Content-Length"])
        body = self.rfile.read(length).decode()
        self.seen.append(("POST", self.path, dict(self.headers), body))
        self._answer(302, b"", {"Location": "/next", "Set-Cookie": "sessionid=s1; HttpOnly"})


@pytest.fixture
def server():
    handler = type("Handler", (_Recorder,), {"seen": [], "close_after_answer": False})
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield httpd, handler
    httpd.shutdown()
    httpd.server_close()


def _base(httpd) -> str:
    return f"http://127.0.0.1:{httpd.server_address[1]}"


def test_cookies_form_posts_and_redirects_not_followed(server):
    httpd, handler = server
    client = Client(_base(httpd))
    page = client.request("GET", "/login", 5.0)
    assert (page.status_code, page.text) == (200, "déjà")
    assert client.cookies == {"csrftoken": "abc"}
    answer = client.request(
        "POST", "/login", 5.0, data={"username": "w", "note": "a&b=c"}, referer="http://x/login"
    )
    assert answer.status_code == 302  # the redirect is returned, not followed
    method, path, headers, body = handler.seen[-1]
    assert (method, path) == ("POST", "/login")
    assert parse_qs(body) == {"username": ["w"], "note": ["a&b=c"]}
    assert headers["Content-Type"] == "application/x-www-form-urlencoded"
    assert headers["Referer"] == "http://x/login"
    assert headers["Cookie"] == "csrftoken=abc"
    assert client.cookies == {"csrftoken": "abc", "sessionid": "s1"}
    client.request("GET", "/logout", 5.0)  # Max-Age=0 deletes the cookie
    assert client.cookies == {"csrftoken": "abc"}
    assert client.connections_opened == 1  # one keep-alive connection for all of it
    assert [entry[0] for entry in handler.seen] == ["GET", "POST", "GET"]


def test_a_get_on_a_closed_keep_alive_connection_is_sent_once_more(server):
    httpd, handler = server
    handler.close_after_answer = True
    client = Client(_base(httpd))
    assert client.request("GET", "/a", 5.0).text == "ok"
    assert client.request("GET", "/b", 5.0).text == "ok"  # the server had closed the first
    assert client.get_retries == 1
    assert [entry[1] for entry in handler.seen] == ["/a", "/b"]


def test_a_post_on_a_closed_connection_is_never_sent_twice(server):
    httpd, handler = server
    handler.close_after_answer = True
    client = Client(_base(httpd))
    client.request("GET", "/a", 5.0)
    with pytest.raises((ConnectionError, OSError)):
        client.request("POST", "/create", 5.0, data={"statement": "once"})
    assert client.get_retries == 0
    assert [entry[0] for entry in handler.seen] == ["GET"]  # the POST was not resent
    # The client is usable again: the next call opens a new connection.
    assert client.request("POST", "/create", 5.0, data={"statement": "again"}).status_code == 302
    assert client.connections_opened == 2


def test_paced_arrivals_are_due_on_schedule_until_the_deadline():
    arrivals = Arrivals(rate=3)
    arrivals.start, arrivals.deadline = 100.0, 102.0
    taken = []
    while (arrival := arrivals.take()) is not None:
        taken.append(arrival)
    assert [index for index, _ in taken] == list(range(6))
    assert [round(due, 6) for _, due in taken] == [
        100.0,
        100.333333,
        100.666667,
        101.0,
        101.333333,
        101.666667,
    ]
    assert arrivals.due_before_deadline() == 6
    assert arrivals.take() is None  # over for good


def test_each_paced_arrival_goes_to_one_worker_only():
    arrivals = Arrivals(rate=1000)
    arrivals.start, arrivals.deadline = 0.0, 2.0
    seen: list[int] = []
    lock = threading.Lock()

    def worker():
        while (arrival := arrivals.take()) is not None:
            with lock:
                seen.append(arrival[0])

    threads = [threading.Thread(target=worker) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(seen) == list(range(2000)) == list(range(arrivals.due_before_deadline()))


def test_the_pacing_report_counts_missed_arrivals_and_latency_from_arrival():
    arrivals = Arrivals(rate=10)
    arrivals.start, arrivals.deadline = 0.0, 1.0
    stats = Stats()
    for late_ms in (0.0, 5.0, 40.0):
        arrivals.late(late_ms / 1000)
    stats.from_arrival.extend([20.0, 30.0, 400.0])
    report = pacing_report(arrivals, stats)
    assert report["offered_submissions_per_second"] == 10.0
    assert (report["arrivals_scheduled"], report["arrivals_served"]) == (10, 3)
    assert report["arrivals_missed"] == 7
    assert report["lateness_ms"]["max"] == 40.0
    assert report["submit_from_arrival_ms"] == {"p50": 30.0, "p95": 400.0}
