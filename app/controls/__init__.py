"""The controls: the sidebar and its keys, the session's state (app.controls.state), the link
(app.controls.url: URL parameters, setup B, a class's teacher link), the upload control and the
class's session side.

Only app.main and the session glue above it import this package; nothing below it does."""
