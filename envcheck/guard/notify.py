"""Where alerts go: a line for the user (the CLI's callback prints it on stderr), DIR/alerts.jsonl, an optional
webhook (a JSON POST with a short timeout, in its own thread) and an optional command (not waited for). Each rule
sends at most once per its cooldown."""

from __future__ import annotations

import json
import os
import subprocess
import threading
import urllib.request
from typing import Callable

from envcheck.guard.model import Alert, Rule
from envcheck.serde import to_dict

WEBHOOK_TIMEOUT_S = 5.0


class Notifier:
    def __init__(self, rules: tuple[Rule, ...], alerts_path: str, say: Callable[[str], None],
                 webhook: str | None = None, command: str | None = None) -> None:
        self.cooldown = {r.id: r.cooldown_s for r in rules}
        self.sent: dict[str, float] = {}
        self.path, self.say, self.webhook, self.command = alerts_path, say, webhook, command
        self.alerts: list[Alert] = []
        self.failures: list[str] = []
        self.threads: list[threading.Thread] = []

    def send(self, alerts: tuple[Alert, ...]) -> tuple[Alert, ...]:
        """Deliver the alerts whose rule is out of its cooldown; return those delivered."""
        delivered = []
        for alert in alerts:
            last = self.sent.get(alert.rule)
            if last is not None and alert.time - last < self.cooldown.get(alert.rule, 600.0):
                continue
            self.sent[alert.rule] = alert.time
            delivered.append(alert)
            self.alerts.append(alert)
            document = to_dict(alert)
            line = json.dumps(document, sort_keys=True)
            with open(self.path, "a", encoding="utf-8") as handle:
                handle.write(line + "\n")
            self.say(f"ALERT [{alert.severity}] {alert.rule}: {alert.message}")
            if self.webhook:
                self._spawn(self._post, line.encode())
            if self.command:
                self._spawn(self._run, alert, line)
        return tuple(delivered)

    def _spawn(self, target: Callable[..., None], *args: object) -> None:
        thread = threading.Thread(target=target, args=args, daemon=True, name="envcheck-guard-notify")
        thread.start()
        self.threads = [t for t in self.threads if t.is_alive()] + [thread]

    def _post(self, body: bytes) -> None:
        request = urllib.request.Request(self.webhook or "", data=body, method="POST",
                                         headers={"Content-Type": "application/json",
                                                  "User-Agent": "envcheck-guard"})
        try:
            with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_S) as response:
                response.read(1024)
        except Exception as error:  # a dead webhook must never stop the guard
            self.failures.append(f"webhook: {type(error).__name__}: {error}")

    def _run(self, alert: Alert, line: str) -> None:
        env = dict(os.environ, ENVCHECK_ALERT_RULE=alert.rule, ENVCHECK_ALERT_SEVERITY=alert.severity,
                   ENVCHECK_ALERT_MESSAGE=alert.message, ENVCHECK_ALERT_JSON=line)
        try:
            subprocess.run(self.command or "", shell=True, env=env, stdin=subprocess.DEVNULL, timeout=60,
                           start_new_session=True)
        except (OSError, subprocess.SubprocessError) as error:
            self.failures.append(f"--on-alert: {type(error).__name__}: {error}")

    def drain(self, timeout: float = WEBHOOK_TIMEOUT_S + 1) -> None:
        """Wait (briefly) for webhooks and commands in flight, so that an alert just before the end is sent."""
        for thread in self.threads:
            thread.join(timeout)
