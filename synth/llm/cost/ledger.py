"""The budget ledger: a sqlite file every worker and process shares.

Before a call, its worst case (prompt tokens + max_tokens at list price) is reserved; a call
whose reservation would take committed spend over the cap is not made. After the call, the
reservation is settled with the usage the provider reported. Committed spend counts settled
calls at their real cost and open or lost reservations at their worst case, so the cap holds
across threads, processes and a crash: a reservation left open by a dead process stays counted
until `recover` settles it from the response cache (it was answered) or marks it lost (unknown:
kept at its worst case, never under-counted).
"""
from __future__ import annotations

import os
import sqlite3
import threading
import time
from dataclasses import dataclass
from pathlib import Path

SCHEMA = """
CREATE TABLE IF NOT EXISTS reservations (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    key TEXT NOT NULL,
    pid INTEGER NOT NULL,
    state TEXT NOT NULL CHECK (state IN ('open', 'settled', 'released', 'lost')),
    reserved_usd REAL NOT NULL,
    settled_usd REAL NOT NULL DEFAULT 0,
    input_tokens INTEGER NOT NULL DEFAULT 0,
    output_tokens INTEGER NOT NULL DEFAULT 0,
    note TEXT NOT NULL DEFAULT '',
    created REAL NOT NULL,
    updated REAL NOT NULL
);
CREATE INDEX IF NOT EXISTS reservations_state ON reservations(state);
"""


@dataclass
class LedgerTotals:
    settled_usd: float
    open_usd: float
    lost_usd: float
    calls_settled: int
    calls_open: int
    calls_released: int
    calls_lost: int
    input_tokens: int
    output_tokens: int

    @property
    def committed_usd(self) -> float:
        return self.settled_usd + self.open_usd + self.lost_usd


class Ledger:
    def __init__(self, path: str | Path, cap_usd: float):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.cap_usd = float(cap_usd)
        self._local = threading.local()
        with self._connect() as db:
            db.executescript(SCHEMA)

    def _connect(self) -> sqlite3.Connection:
        db = getattr(self._local, "db", None)
        if db is None:
            db = sqlite3.connect(self.path, timeout=60, isolation_level=None)
            db.execute("PRAGMA journal_mode=WAL")
            db.execute("PRAGMA synchronous=FULL")  # a settled call survives a power cut, not just a crash
            self._local.db = db
        return db

    def _committed(self, db) -> float:
        row = db.execute("SELECT COALESCE(SUM(CASE WHEN state='settled' THEN settled_usd "
                         "WHEN state IN ('open','lost') THEN reserved_usd ELSE 0 END), 0) FROM reservations").fetchone()
        return row[0]

    def reserve(self, key: str, worst_usd: float) -> int | None:
        """Reserve `worst_usd` for a call, or None (the call must not be made) if the cap would be crossed."""
        db = self._connect()
        now = time.time()
        db.execute("BEGIN IMMEDIATE")  # one writer at a time, across processes: check and insert are atomic
        try:
            if self._committed(db) + worst_usd > self.cap_usd + 1e-12:
                db.execute("ROLLBACK")
                return None
            cur = db.execute("INSERT INTO reservations (key, pid, state, reserved_usd, created, updated) "
                             "VALUES (?, ?, 'open', ?, ?, ?)", (key, os.getpid(), worst_usd, now, now))
            db.execute("COMMIT")
            return cur.lastrowid
        except BaseException:
            db.execute("ROLLBACK")
            raise

    def settle(self, reservation: int, cost_usd: float, input_tokens: int, output_tokens: int, note: str = "") -> None:
        self._connect().execute(
            "UPDATE reservations SET state='settled', settled_usd=?, input_tokens=?, output_tokens=?, note=?, "
            "updated=? WHERE id=? AND state IN ('open', 'lost')",
            (cost_usd, input_tokens, output_tokens, note, time.time(), reservation))

    def release(self, reservation: int, note: str) -> None:
        """The provider certainly did not charge (e.g. 429, refused connection, 5xx before work)."""
        self._connect().execute("UPDATE reservations SET state='released', note=?, updated=? WHERE id=? AND state='open'",
                                (note, time.time(), reservation))

    def mark_lost(self, reservation: int, note: str) -> None:
        """Unknown whether it was charged: stays committed at its worst case."""
        self._connect().execute("UPDATE reservations SET state='lost', note=?, updated=? WHERE id=? AND state='open'",
                                (note, time.time(), reservation))

    def recover(self, answered) -> dict:
        """Open reservations of processes that no longer run: settled from the response cache if
        the call was answered (`answered(key)` -> (cost, input_tokens, output_tokens) or None),
        else marked lost. Returns counts."""
        db = self._connect()
        settled = lost = 0
        for rid, key, pid in db.execute("SELECT id, key, pid FROM reservations WHERE state='open'").fetchall():
            if pid == os.getpid() or _alive(pid):
                continue
            found = answered(key)
            if found is not None:
                self.settle(rid, *found, note="recovered from the response cache after a crash")
                settled += 1
            else:
                self.mark_lost(rid, "process died during the call")
                lost += 1
        return {"settled": settled, "lost": lost}

    def totals(self) -> LedgerTotals:
        row = self._connect().execute(
            "SELECT "
            "COALESCE(SUM(CASE WHEN state='settled' THEN settled_usd END), 0), "
            "COALESCE(SUM(CASE WHEN state='open' THEN reserved_usd END), 0), "
            "COALESCE(SUM(CASE WHEN state='lost' THEN reserved_usd END), 0), "
            "SUM(state='settled'), SUM(state='open'), SUM(state='released'), SUM(state='lost'), "
            "COALESCE(SUM(input_tokens), 0), COALESCE(SUM(output_tokens), 0) FROM reservations").fetchone()
        return LedgerTotals(row[0], row[1], row[2], row[3] or 0, row[4] or 0, row[5] or 0, row[6] or 0, row[7], row[8])

    def remaining_usd(self) -> float:
        return max(0.0, self.cap_usd - self._committed(self._connect()))


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
