"""A page's own Streamlit websocket, routed through Playwright (`page.route_web_socket`), for
the class's forgery tests: hold back the request a teacher's click sends (the server never
gets it until it is let go), and send frames of one's choosing on a student's socket, as a
student's own browser could, and know when the server has run the whole page for it. Frames
are protobufs (BackMsg from the page, ForwardMsg from the server), read with Streamlit's own
classes."""

from __future__ import annotations

import time

from streamlit.proto.BackMsg_pb2 import BackMsg
from streamlit.proto.ForwardMsg_pb2 import ForwardMsg

from tests.e2e.harness import page_summary

STREAM = "**/_stcore/stream"  # Streamlit's websocket


def clicks(frame: bytes | str, key: str) -> bool:
    """Whether `frame` is a rerun that carries a click on the button with widget key `key`."""
    if isinstance(frame, str):
        return False
    message = BackMsg.FromString(frame)
    if message.WhichOneof("type") != "rerun_script":
        return False
    widgets = message.rerun_script.widget_states.widgets
    return any(widget.id.endswith(f"-{key}") and widget.trigger_value for widget in widgets)


def whole_page(frame: bytes) -> bytes:
    """The same rerun for the whole page instead of its fragment (the click still in it)."""
    message = BackMsg.FromString(frame)
    message.rerun_script.fragment_id = ""
    return message.SerializeToString()


def finishes_page(frame: bytes | str) -> bool:
    """Whether `frame` (from the server) says a run of the whole page finished."""
    if isinstance(frame, str):
        return False
    message = ForwardMsg.FromString(frame)
    return (
        message.WhichOneof("type") == "script_finished"
        and message.script_finished == ForwardMsg.FINISHED_SUCCESSFULLY
    )


class RoutedSocket:
    """A page's websocket to the server, every frame passed on both ways, except that a click
    on the button `hold` (a widget key) is kept in `held` instead of reaching the server;
    `pages_run` counts the whole-page runs the server finished for this page. Route before the
    page opens (`RoutedSocket(page)`, then `page.goto`)."""

    def __init__(self, page, hold: str | None = None) -> None:
        self.page, self.hold = page, hold
        self.held: list[bytes] = []
        self.pages_run = 0
        self.server = None
        page.route_web_socket(STREAM, self._route)

    def _route(self, socket) -> None:
        self.server = socket.connect_to_server()
        socket.on_message(self._from_page)
        self.server.on_message(lambda frame: self._from_server(socket, frame))

    def _from_server(self, socket, frame: bytes | str) -> None:
        self.pages_run += finishes_page(frame)
        socket.send(frame)

    def _from_page(self, frame: bytes | str) -> None:
        if self.hold is not None and clicks(frame, self.hold):
            self.held.append(frame)
        else:
            self.server.send(frame)

    def send(self, frame: bytes) -> None:
        """`frame` to the server, as if the page had sent it."""
        self.server.send(frame)

    def wait(self, condition, what: str, timeout_s: float = 90) -> None:
        """Until `condition()` holds (Playwright passes frames on only while it is called)."""
        deadline = time.monotonic() + timeout_s
        while not condition():
            if time.monotonic() > deadline:
                shown = page_summary(self.page)
                raise AssertionError(f"{what}: not within {timeout_s:g} s\n{shown}")
            self.page.wait_for_timeout(50)

    def release(self) -> None:
        """The held frames to the server, in the order they were sent."""
        for frame in self.held:
            self.server.send(frame)
        self.held.clear()
