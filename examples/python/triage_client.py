#!/usr/bin/env python3
"""A client of the triage agent's JSON API in Python's standard library only.

It speaks HTTP/1.1 over TLS to the agent's TCP port (the same port number as
QUIC, 4433 by default): POST /v1/decide, POST /v1/outcomes, GET /v1/state.
Task ids are the caller's own strings (request ids, UUIDs), 1..128 bytes; the
agent answers each with the id as it was sent.

    python3 triage_client.py --addr NODE:4433 --pin-sha256 FINGERPRINT \
        --task order-81f2:interactive:20:2 --task report-77:batch:5000:800

Trust, pick one: --cafile FILE (a CA, or the agent's own --tls-cert), or
--pin-sha256 HEX (the fingerprint the agent logs at start: the certificate is
then trusted exactly, by its hash). --token or $TRIAGE_TOKEN when the agent
requires a bearer token.
"""

import argparse
import hashlib
import http.client
import json
import os
import ssl
import sys
import time


class TriageError(Exception):
    """An answer other than 200, with the agent's {"error": ...} text."""

    def __init__(self, status, message):
        super().__init__(f"HTTP {status}: {message}")
        self.status = status
        self.message = message


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    """Checks the certificate's SHA-256 right after each handshake, before
    anything (a token above all) is sent on the connection."""

    def __init__(self, host, port, pin, **kw):
        super().__init__(host, port, **kw)
        self._pin = pin

    def connect(self):
        super().connect()
        got = hashlib.sha256(self.sock.getpeercert(binary_form=True)).hexdigest()
        if got != self._pin:
            self.sock.close()
            self.sock = None
            raise ssl.SSLError(f"server certificate sha256 {got} does not match the pin {self._pin}")


class TriageClient:
    """One keep-alive HTTPS connection to an agent."""

    def __init__(self, host, port, cafile=None, pin_sha256=None, token=None, timeout=5.0):
        if bool(cafile) == bool(pin_sha256):
            raise ValueError("give exactly one of cafile and pin_sha256")
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        ctx.minimum_version = ssl.TLSVersion.TLSv1_3
        ctx.set_alpn_protocols(["http/1.1"])
        if cafile:
            ctx.load_verify_locations(cafile=cafile)
            self._conn = http.client.HTTPSConnection(host, port, context=ctx, timeout=timeout)
        else:
            # The pin replaces chain and name checks, as the Go client's does.
            ctx.check_hostname = False
            ctx.verify_mode = ssl.CERT_NONE
            pin = pin_sha256.lower().replace(":", "")
            self._conn = _PinnedHTTPSConnection(host, port, pin, context=ctx, timeout=timeout)
        self._headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if token:
            self._headers["Authorization"] = "Bearer " + token

    def _call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        self._conn.request(method, path, body=data, headers=self._headers)
        resp = self._conn.getresponse()
        payload = resp.read()
        try:
            doc = json.loads(payload)
        except ValueError:
            doc = {"error": payload.decode(errors="replace")}
        if resp.status != 200:
            raise TriageError(resp.status, doc.get("error", ""))
        return doc

    def decide(self, tasks):
        """tasks: dicts with id, class, sla_ms, cost_ms, tenant. Returns the answer."""
        return self._call("POST", "/v1/decide", {"tasks": tasks})

    def report_outcomes(self, outcomes):
        """outcomes: dicts with id, latency_ms, service_ms, sla_met. Returns how many were taken."""
        return self._call("POST", "/v1/outcomes", {"outcomes": outcomes})["accepted"]

    def state(self):
        return self._call("GET", "/v1/state")

    def close(self):
        self._conn.close()


def parse_task(spec):
    """ID:CLASS:SLA_MS:COST_MS (the id may not contain a colon here)."""
    parts = spec.split(":")
    if len(parts) != 4:
        raise argparse.ArgumentTypeError(f"task {spec!r}: want ID:CLASS:SLA_MS:COST_MS")
    tid, cls, sla, cost = parts
    return {"id": tid, "class": cls, "sla_ms": float(sla), "cost_ms": float(cost)}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--addr", default="127.0.0.1:4433", help="the agent's TCP address, host:port")
    ap.add_argument("--cafile", help="PEM file of the CA (or certificate) to verify the agent with")
    ap.add_argument("--pin-sha256", help="hex SHA-256 of the agent's certificate")
    ap.add_argument("--token", default=os.environ.get("TRIAGE_TOKEN"), help="bearer token (default $TRIAGE_TOKEN)")
    ap.add_argument("--task", action="append", type=parse_task, required=True, help="ID:CLASS:SLA_MS:COST_MS, repeatable")
    ap.add_argument("--report", action="store_true", help="then report each task as done within its SLA")
    args = ap.parse_args(argv)

    host, _, port = args.addr.rpartition(":")
    client = TriageClient(host.strip("[]"), int(port), cafile=args.cafile, pin_sha256=args.pin_sha256, token=args.token)
    try:
        started = time.monotonic()
        answer = client.decide(args.task)
        took_ms = (time.monotonic() - started) * 1000
        result = {"decide": answer, "round_trip_ms": round(took_ms, 3)}
        if args.report:
            outcomes = [{"id": t["id"], "latency_ms": t["cost_ms"], "service_ms": t["cost_ms"], "sla_met": True} for t in args.task]
            result["accepted"] = client.report_outcomes(outcomes)
        result["state_epoch"] = client.state()["epoch"]
    except TriageError as e:
        print(f"triage: {e}", file=sys.stderr)
        return 1
    finally:
        client.close()
    json.dump(result, sys.stdout)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
