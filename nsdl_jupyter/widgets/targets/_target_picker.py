"""TargetPicker: where the ActivityPanel runs, this machine or a saved SSH connection.

A selector (localhost and `connections().names()`) with Connect, a "+" form that makes a
connection (Test, Save), a Trust button for an unknown or changed host key, and the target's
dependency table (`check_target`). Passwords and passphrases are typed into masked fields whose
values are synced widget traits: they are read when a button is pressed, handed straight to
the target's constructor, and the fields are cleared at once, so no widget state, saved
notebook or connections file ever holds them (the target keeps them in memory only).
"""

from __future__ import annotations

import shlex
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import ipywidgets as widgets

from nsdl_jupyter._display import html_text
from nsdl_jupyter.profiling import TargetCheck, check_target
from nsdl_jupyter.targets import (
    Connections,
    HostKeyError,
    LocalTarget,
    SshTarget,
    Target,
    TargetError,
    TargetSettingsError,
    connections,
)
from nsdl_jupyter.widgets._main_shell import MainShellBox
from nsdl_jupyter.widgets._options import BoxOptions, check_options

if TYPE_CHECKING:
    from typing_extensions import Unpack  # typing.Unpack from Python 3.11

LOCAL = ""  # the selector's value for this machine (no saved connection has an empty name)
_STATUS_COLOURS = {"ok": "#2e7d32", "warning": "#ef6c00", "missing": "#c62828"}
# Errors a connection attempt raises for a user to act on (the message says how).
_CONNECT_ERRORS = (TargetError, TargetSettingsError, KeyError, OSError)

TargetListener = Callable[[Target], None]
# What to do once a target is connected: it and the seconds connecting took.
_Then = Callable[[SshTarget, float], None]


def check_table_html(check: TargetCheck) -> str:
    """The dependency table: one row per item, its status coloured, every text escaped."""
    rows = "".join(
        f"<tr><td>{html_text(r.item)}{' *' if r.required else ''}</td>"
        f"<td style='color:{_STATUS_COLOURS.get(r.status, 'inherit')}'>{html_text(r.status)}</td>"
        f"<td>{html_text(r.detail)}</td></tr>"
        for r in check.rows
    )
    verdict = "ready" if check.ok else "NOT ready: a required item (*) is missing"
    return (
        f"<b>{html_text(check.target)}</b>: {html_text(verdict)}"
        "<table class='nsdl-target-check'><tr><th>item</th><th>status</th><th>detail</th></tr>"
        f"{rows}</table>"
    )


def _message(kind: str, text: str) -> str:
    colour = {"error": "#c62828", "ok": "#2e7d32"}.get(kind, "inherit")
    return f"<span style='color:{colour}'>{html_text(text)}</span>"


class TargetPicker(MainShellBox, widgets.VBox):  # type: ignore[misc]
    """Pick, add, test and trust targets; `target` is the one connected last (localhost by
    default) and `on_target` hears each change."""

    def __init__(
        self,
        target: Target | None = None,
        *,
        on_target: TargetListener | None = None,
        store: Connections | None = None,
        **box: Unpack[BoxOptions],
    ) -> None:
        check_options("TargetPicker", box, BoxOptions, ("on_target", "store"))
        self.store = store or connections()
        self.target: Target = target or LocalTarget()
        self.check: TargetCheck | None = None
        self.on_target = on_target
        # Targets made in this session, by name: they keep their secrets in memory only.
        self._made: dict[str, SshTarget] = {}
        if isinstance(target, SshTarget):
            self._made[target.name] = target
        self._refused: tuple[SshTarget, HostKeyError, _Then] | None = None
        self._broken = ""  # why the connections file could not be read

        self._selector = widgets.Dropdown(description="Target", options=self._options())
        self._selector.value = LOCAL if self.target.name == "local" else self.target.name
        self._selector.observe(self._on_select, names="value")
        self._connect = widgets.Button(
            description="Connect", icon="plug", tooltip="connect and check what the target offers"
        )
        self._connect.on_click(lambda _b: self.connect())
        self._add = widgets.ToggleButton(description="+", tooltip="add an SSH connection",
                                         layout=widgets.Layout(width="3em"))  # fmt: skip
        self._add.observe(self._on_add, names="value")
        self._password = widgets.Password(description="Password", placeholder="never saved")
        self._passphrase = widgets.Password(description="Passphrase",
                                            placeholder="of the key file; never saved")  # fmt: skip
        self._secrets = widgets.HBox([self._password, self._passphrase])
        self._form = self._make_form()
        self._host_key = widgets.HTML("")
        self._trust = widgets.Button(
            description="Trust", button_style="warning", icon="key",
            tooltip="trust this host key and save it in known_hosts",
        )  # fmt: skip
        self._trust.on_click(lambda _b: self.trust())
        self._host_key_row = widgets.HBox([self._host_key, self._trust])
        self._message = widgets.HTML("")
        self._table = widgets.HTML("")
        super().__init__(
            children=[
                widgets.HBox([self._selector, self._connect, self._add]),
                self._form,
                self._secrets,
                self._host_key_row,
                self._message,
                self._table,
            ],
            **box,
        )
        self.add_class("nsdl-target-picker")
        self._form.layout.display = "none"
        self._host_key_row.layout.display = "none"
        self._show_secrets()
        if self._broken:
            self._say("error", self._broken)

    def _make_form(self) -> widgets.VBox:
        def text(description: str, value: str = "", placeholder: str = "") -> widgets.Text:
            return widgets.Text(value, description=description, placeholder=placeholder)

        self._host = text("Host", placeholder="name, address or ssh_config alias")
        self._user = text("User", placeholder="default: ssh_config or your login")
        self._port = widgets.BoundedIntText(22, min=1, max=65535, description="Port")
        self._key_file = text("Key file", placeholder="~/.ssh/id_ed25519 (optional)")
        self._agent = widgets.Checkbox(True, description="use the SSH agent", indent=False)
        self._deploy_dir = text("Deploy dir", "~/.nsdl")
        self._name = text("Name", placeholder="default: user@host:port")
        self._proxy_jump = text("ProxyJump", placeholder="[user@]host[:port][,...] (optional)")
        self._proxy_command = text("ProxyCommand", placeholder="argv, %h %p %r (no shell)")
        self._python = text("Python", "python3")
        self._test = widgets.Button(description="Test", icon="check")
        self._test.on_click(lambda _b: self.test())
        self._save = widgets.Button(description="Save", icon="save", button_style="primary")
        self._save.on_click(lambda _b: self.save())
        form = widgets.VBox(
            [
                widgets.HBox([self._host, self._user, self._port]),
                widgets.HBox([self._key_file, self._agent]),
                widgets.HBox([self._deploy_dir, self._name, self._python]),
                widgets.HBox([self._proxy_jump, self._proxy_command]),
                widgets.HBox([self._test, self._save]),
            ]
        )
        form.add_class("nsdl-connection-form")
        return form

    # ---- state ----------------------------------------------------------------------------

    def _options(self) -> list[tuple[str, str]]:
        try:
            saved = self.store.names()
        except TargetSettingsError as exc:  # a broken connections file: localhost still works
            self._broken = str(exc)
            saved = []
        names = [*saved, *(n for n in self._made if n not in saved)]
        return [("localhost", LOCAL), *((name, name) for name in names)]

    def _show_secrets(self) -> None:
        remote = self._add.value or self._selector.value != LOCAL
        self._secrets.layout.display = None if remote else "none"

    def _on_add(self, change: dict[str, Any]) -> None:
        self._form.layout.display = None if change["new"] else "none"
        self._show_secrets()

    def _on_select(self, change: dict[str, Any]) -> None:
        self._show_secrets()
        if change["new"] == LOCAL:
            self._use(LocalTarget())
        else:
            self._say("info", f"press Connect to use {change['new']}")

    def _say(self, kind: str, text: str) -> None:
        self._message.value = _message(kind, text)

    def _take_secrets(self) -> tuple[str | None, str | None]:
        """The typed password and passphrase, the fields cleared at once."""
        password, passphrase = self._password.value, self._passphrase.value
        self._password.value = ""
        self._passphrase.value = ""
        return password or None, passphrase or None

    def _use(self, target: Target, check: TargetCheck | None = None) -> None:
        self.target = target
        self.check = check
        self._table.value = check_table_html(check) if check is not None else ""
        if self.on_target is not None:
            self.on_target(target)

    def set_busy(self, busy: bool) -> None:
        """While a run goes on the target cannot change (the panel calls this)."""
        for control in (self._selector, self._connect, self._trust, self._test, self._save):
            control.disabled = busy

    # ---- actions --------------------------------------------------------------------------

    def form_target(self) -> SshTarget:
        """A target from the form's fields and the typed secrets (the fields cleared)."""
        password, passphrase = self._take_secrets()
        if not self._host.value.strip():
            raise TargetSettingsError("Host: give the host name, address or ssh_config alias")
        proxy = self._proxy_command.value.strip()
        return SshTarget(
            self._host.value.strip(),
            self._user.value.strip() or None,
            int(self._port.value),
            password=password,
            passphrase=passphrase,
            key_file=self._key_file.value.strip() or None,
            agent=bool(self._agent.value),
            deploy_dir=self._deploy_dir.value.strip() or "~/.nsdl",
            name=self._name.value.strip() or None,
            proxy_jump=self._proxy_jump.value.strip() or None,
            proxy_command=shlex.split(proxy) if proxy else None,
            python=self._python.value.strip() or "python3",
        )

    def test(self) -> None:
        """Connect with the form's settings, show how long it took, the deploy dir and the
        dependency table (the target is kept for Save and Connect, secrets in memory)."""
        try:
            target = self.form_target()
        except (TargetSettingsError, ValueError) as exc:
            self._say("error", f"{type(exc).__name__}: {exc}")
            return
        self._attempt(target, self._tested)

    def _tested(self, target: SshTarget, seconds: float) -> None:
        self._made[target.name] = target
        self._show_check(target, f"{target.name}: connected in {seconds:.2f} s, deploy dir "
                                 f"{target.deploy_root}")  # fmt: skip

    def save(self) -> None:
        """Save the form's connection (no secrets) and select it."""
        try:
            target = self.form_target()
            self.store.add(target)
        except (TargetSettingsError, ValueError) as exc:
            self._say("error", f"{type(exc).__name__}: {exc}")
            return
        tested = self._made.get(target.name)
        if tested is None or tested.settings() != target.settings():
            self._made[target.name] = target  # keeps the secrets typed just now, in memory
        self._selector.options = self._options()
        self._selector.value = target.name
        self._add.value = False
        self._say("ok", f"saved {target.name}; press Connect to use it")

    def connect(self) -> None:
        """Connect to the selected target, check it and make it the panel's target."""
        name = self._selector.value
        if name == LOCAL:
            self._show_check(LocalTarget(), "localhost", use=True)
            return
        password, passphrase = self._take_secrets()
        target = self._made.get(name)
        try:
            if target is None or password is not None or passphrase is not None:
                target = self.store.get(name, password=password, passphrase=passphrase)
                self._made[name] = target
        except _CONNECT_ERRORS as exc:
            self._say("error", f"{type(exc).__name__}: {exc}")
            return
        self._attempt(target, self._connected)

    def _connected(self, target: SshTarget, seconds: float) -> None:
        self._show_check(target, f"connected to {target.name} in {seconds:.2f} s", use=True)

    def _attempt(self, target: SshTarget, then: _Then) -> None:
        """Connect `target`, then `then`; a refused host key shows Trust, which retries."""
        self._host_key_row.layout.display = "none"
        self._refused = None
        start = time.perf_counter()
        try:
            target.connect()
        except HostKeyError as err:
            self._refused = (target, err, then)
            self._host_key.value = (
                f"{_message('error', 'host key not trusted:')} <b>{html_text(err.host)}</b> "
                f"shows <code>{html_text(err.fingerprint)}</code>. Compare it with the host's "
                "<code>ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub</code>, then Trust it."
            )
            self._host_key_row.layout.display = None
            self._say("error", str(err))
            return
        except _CONNECT_ERRORS as exc:
            self._say("error", f"{type(exc).__name__}: {exc}")
            return
        except Exception as exc:  # an error we did not foresee: shown, never silent
            self._say("error", f"cannot connect to {target.name}: {type(exc).__name__}: {exc}")
            return
        then(target, time.perf_counter() - start)

    def trust(self) -> None:
        """Trust the refused host key (saved in known_hosts) and retry what was refused."""
        if self._refused is None:
            return
        target, err, then = self._refused
        try:
            target.trust_host_key(err.fingerprint)
        except TargetError as exc:
            self._say("error", f"{type(exc).__name__}: {exc}")
            return
        self._attempt(target, then)

    def _show_check(self, target: Target, done: str, *, use: bool = False) -> None:
        try:
            check = check_target(target)
        except Exception as exc:  # shown to the user: the check is advice, not a failure
            self._say("error", f"{done}; the check failed: {type(exc).__name__}: {exc}")
            return
        if use:
            self._use(target, check)
        else:
            self.check = check
            self._table.value = check_table_html(check)
        self._say("ok", done)
