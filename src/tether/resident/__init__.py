"""The resident project process: one per project, holding the open index, answering hooks and read commands.

`client` is what a hook process runs on its warm path and imports only the standard library (`os`,
`_socket`; `json` only for the CLI's requests); `server` is the process, `answers` what it answers with
(the hook adapter's behaviour and the CLI's commands over one open workspace), `launch` starts it, `command`
is `tether resident`. This package sits above the adapters (it composes them, as `tether.__main__` does) and
may import every layer below it.
"""
